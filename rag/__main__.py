import sys

from rag.cli import main

if __name__ == "__main__":  # not when a spawned worker process imports it (rag/chunking/cl100k.py)
    sys.exit(main())
