"""RAG Knowledge Lab library: everything testable without Streamlit."""
