"""Faces for a fleet of servers: start-up probes that know the phase (``probe.py``, the sidecar's
side in ``sidecar.py``), start-up traces over OTLP (``otlp.py``), an lnav log format derived from
the grammars (``lnav.py``) and a Grafana dashboard for the follower's metrics (``grafana.py``)."""
