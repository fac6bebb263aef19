"""The scripted model server over real HTTP on loopback, with request bodies shaped as Pi 0.80.10's
provider adapters send them (no Pi): one client module per wire protocol, each emulating what Pi
does between model calls."""
