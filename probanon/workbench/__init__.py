"""The office's workbench (issue 44): sdcApp's workflow in the browser, on the library and the command
line underneath. ``probanon workbench [FILE]`` serves it on 127.0.0.1 with an access token.

:mod:`.table` the file (opened at once, paged on the server, summarised in the background),
:mod:`.methods` the treatments and roles as the release commands take them (a strategy is a
recipe run by ``probanon release``), :mod:`.measures` risk and utility, :mod:`.session` the state
with its undo/redo history, :mod:`.jobs` background work with progress and cancel, :mod:`.app`
the HTTP API and page, :mod:`.server` running it.
"""

#: the largest upload (MiB) unless ``--max-upload-mb`` says otherwise (here: the parser reads it without
#: importing the server)
MAX_UPLOAD_MB = 2048
