"""The command line: the typer app by command group, the launcher, the config file and doctor.
The one front-end edge that maps errors and end reasons to exit codes.
"""
