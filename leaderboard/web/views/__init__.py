"""The web pages, one module per page (or group of account pages)."""
