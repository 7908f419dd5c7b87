"""The IO of one call: the session (run loop, room, outbox, media), the HTTP api client,
audio, client tools and the journal writer/reader. It never prints, exits or picks an exit
code, and never imports the front ends' config.
"""
