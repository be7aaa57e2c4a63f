"""The thin hook client: standard library only, so that starting it costs a bare Python start."""
