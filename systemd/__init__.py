"""Service templates (systemd user unit, launchd agent), read as package data by `daemon.service`."""
