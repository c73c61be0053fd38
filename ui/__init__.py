"""What the pages share: cached resources, widgets and formatting. The only Streamlit code outside pages/."""
