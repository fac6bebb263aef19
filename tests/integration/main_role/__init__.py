"""The main role on fakes, built from the main bridge's composition root over a test world: its
``/squad`` command and live view, and which main Pi session owns a squad."""
