"""`veracity serve`: a REST API and a web UI over the public API and the composition root.

Needs the ``server`` extra (FastAPI, uvicorn): ``pip install "veracity[server]"``, or
``pip install -e ".[server]"`` in a source checkout (`veracity.core.extras.install_command`).
"""

from veracity.server.app import create_app
from veracity.server.runner import BackgroundServer, serve
from veracity.server.settings import ServerSettings

__all__ = ["BackgroundServer", "ServerSettings", "create_app", "serve"]
