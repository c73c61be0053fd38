"""What the pages share: cached resources (resources.py), widgets (widgets.py) and formatting
(format.py). With pages/ and app.py, the only Streamlit code of the project.

Every page imports from this package before drawing anything, so importing it is where a page
started without the router (Streamlit's discovery of pages/ on a fresh server's first request)
is sent back through it: see routing.py.
"""

from ui import routing as _routing

_routing.through_router()
