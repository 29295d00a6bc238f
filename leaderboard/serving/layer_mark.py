"""How Django and the ASGI layer in front of it (leaderboard/serving/asgi_kept.py) speak about answers the
layer may keep: the layer marks a request it passes on with a header whose value is random per
process, so no client can ask for what follows; the view answers a marked request with a header
saying under what the answer may be kept, which the layer takes off before the answer goes out."""
import secrets

MARK_HEADER = "X-Lb-Kept-Layer"
MARK = secrets.token_hex(16)
OWN_HEADER = "X-Lb-Keep"  # a caller's own read: "finished" or "unfinished" (api/owncache)
PUBLIC_HEADER = "X-Lb-Public"  # a public answer: "<built at> <pagecache key>" (web/pagecache)


def from_layer(request) -> bool:
    return request.headers.get(MARK_HEADER) == MARK
