"""The Pi release pi-squad is built against (its events, tools and RPC) and starts: alone in its
module so that ``pi-squad --version`` names it without importing the runtime adapter."""

PI_VERSION = "0.80.10"
