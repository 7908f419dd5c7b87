"""The CLI's commands, one module per command group (app.py registers them on the one app)."""
