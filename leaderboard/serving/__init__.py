"""What stands between the web server and the views: the ASGI layers in front of Django and the
middleware and handlers every request meets.

- asgi_body: each request's body read in the event loop, and drained when Django leaves it;
- asgi_kept: answers kept whole and sent without Django while they still hold (with layer_mark,
  how Django and the layer speak about them);
- asgi_wait and finish_wait: `GET /api/submissions/<id>?wait=S` held in the event loop;
- middleware: TRACE, HEAD under /api/, the headers every answer gets;
- errors: error answers in the form their reader expects;
- health: GET /healthz;
- staticfinders: Django's static file finders, with no path outside their directories.
"""
