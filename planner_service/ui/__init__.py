"""The plan explorer's page (index.html, explorer.js, explorer.css), served by api/ui.py at /ui."""
