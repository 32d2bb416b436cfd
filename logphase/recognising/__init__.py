"""Stage 3, recognising: a line -> the typed event it is. The grammars' messages compiled into
regular expressions (``recognisers.py``), the dispatch (``classify.py``), the message table
(``messages.py``), multi-line records such as tracebacks (``records.py``), start-up notes, which
server a run is (``detect.py``), and the bulk path that counts runs of lines that carry no event
(``bulk.py``, ``plain.py``, ``prefilter.py``).
"""
