"""The broker's own RPC: ``POST /v1/<api>`` with msgpack maps.

:mod:`.schema` is the small schema language, :mod:`.messages` declares every API in it,
:mod:`.codec` turns bytes into validated maps, :mod:`.typed` turns those maps into the
request layer's dataclasses (:mod:`.types`, generated from :mod:`.messages`) and back,
and :mod:`.http` frames calls.  Pure: no I/O.
"""
