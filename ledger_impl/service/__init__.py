"""`ledger serve`: one resident Ledger per user, answering agents' hook calls without a process each.

Theory of operation. The service keeps, for every workspace it has been asked about, an open
`DurableSession` driven by a resident inotify detector (`resident.py`), so a hook call costs a
drain of the kernel's event queue instead of a scan of the tree. Every decide and record is
still one SQLite transaction (the session's own write-through), so a `kill -9` loses at most
the call in flight; the detector's baseline is a token naming this process, so after a restart
(or a call answered in between by the in-process fallback) the first poll of each workspace is
unknown scope. Calls come over two transports (`server.py`): HTTP on 127.0.0.1 for Claude
Code's `type: "http"` hooks and a Unix socket for the thin command client (`ledger_client`);
both are gated (`gate.py`) before any state is read. Files live under the user's state
directory (`layout.py`), never in a workspace.
"""
