"""The faces of flows in a real Pi 0.80.10 session (docs/flows.md, "Faces inside Pi")."""
