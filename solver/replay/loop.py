"""The event loop of a replay: hand arrivals to the server, advance it to its next event, tell
the source what finished. Everything else (iterations, schedules, routing) lives in the server;
everything about who sends what and when in the source."""

from __future__ import annotations

import math

from solver.errors import InputError
from solver.replay.requests import Server, Source


def run(source: Source, server: Server, max_events: int = 50_000_000) -> int:
    """Replay until the source is done and the server idle; returns the events processed.

    `max_events` bounds the loop (a server that never finishes would otherwise spin): each
    event is a batch of arrivals or one server advance.
    """
    events = 0
    while events < max_events:
        t_arrive = source.next_arrival_s()
        t_server = server.next_event_s()
        if math.isinf(t_arrive) and math.isinf(t_server):
            if not source.done():
                raise RuntimeError("replay stalled: the source waits for requests the server does not hold")
            return events
        events += 1
        if t_arrive <= t_server:
            server.submit(source.take(t_arrive), t_arrive)
        else:
            finished = server.advance(t_server)
            if len(finished):
                source.finished(finished, t_server)
    raise InputError(f"replay: more than {max_events} events; ask for fewer requests")
