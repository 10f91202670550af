"""HTTP/1.1 framing of wire.py, over a socket pair: every way the API server (or a proxy
in between) may frame an answer, read in pieces as TCP may deliver it."""

import socket
import threading

import pytest

from kubectl_unfinalize.net.wire import Parser, ProtocolError, Wire, header_lines, request_head

HEAD = request_head("GET", "/version", "cluster:6443", header_lines([("Accept", "application/json")]), None)


def exchange(answer: bytes, piece: int = 0, body: bytes | None = None) -> tuple[object, bytes]:
    """Serve `answer` (in pieces of `piece` bytes when set) to one request; return the
    parsed response and the bytes the server received."""
    client, server = socket.socketpair()
    received = bytearray()

    def serve():
        while b"\r\n\r\n" not in received:
            received.extend(server.recv(65536))
        if body:
            while not received.endswith(body):
                received.extend(server.recv(65536))
        step = piece or max(len(answer), 1)
        for i in range(0, len(answer), step):
            server.sendall(answer[i : i + step])
        server.shutdown(socket.SHUT_WR)

    thread = threading.Thread(target=serve)
    thread.start()
    client.settimeout(5)
    try:
        response = Wire(client).exchange(HEAD, body)
    finally:
        thread.join()
        client.close()
        server.close()
    return response, bytes(received)


@pytest.mark.parametrize("piece", [0, 1, 7])
def test_content_length_body_in_any_pieces(piece):
    response, sent = exchange(b'HTTP/1.1 200 OK\r\nContent-Length: 11\r\nRetry-After: 3\r\n\r\n{"a": true}', piece)
    assert (response.status, response.reason, response.data) == (200, "OK", b'{"a": true}')
    assert response.headers["retry-after"] == "3" and not response.will_close
    assert sent == HEAD


@pytest.mark.parametrize("piece", [0, 1, 5])
def test_chunked_body_with_extensions_and_trailers(piece):
    answer = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b'4;x=y\r\n{"a"\r\nA\r\n: [1, 2]}\n\r\n0\r\nX-Trailer: 1\r\n\r\n'
    )
    response, _ = exchange(answer, piece)
    assert response.data == b'{"a": [1, 2]}\n'


def test_interim_answers_are_skipped():
    response, _ = exchange(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}")
    assert (response.status, response.data) == (201, b"{}")


def test_close_and_http10_mark_the_connection_done():
    assert exchange(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")[0].will_close
    assert exchange(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")[0].will_close
    response, _ = exchange(b"HTTP/1.1 200 OK\r\n\r\nuntil the end")
    assert response.will_close and response.data == b"until the end"


def test_the_body_is_sent_after_the_head_with_its_length():
    head = request_head("PATCH", "/x", "h", header_lines([("Content-Type", "application/merge-patch+json")]), 2)
    assert head.endswith(b"Content-Length: 2\r\n\r\n")
    _, sent = exchange(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", body=b"{}")
    assert sent == HEAD + b"{}"


@pytest.mark.parametrize(
    "answer",
    [
        b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ],
)
def test_what_is_not_http_is_a_protocol_error(answer):
    with pytest.raises(ProtocolError):
        exchange(answer)


def test_a_connection_closed_before_the_whole_answer_is_a_reset():
    with pytest.raises(ConnectionResetError):
        exchange(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
    with pytest.raises(ConnectionResetError):
        exchange(b"")


def test_a_header_value_with_a_line_break_is_refused_before_sending():
    with pytest.raises(ValueError, match="Authorization"):
        header_lines([("Authorization", "Bearer a\r\nX-Injected: 1")])
    with pytest.raises(ValueError, match="target"):
        request_head("GET", "/api/v1/namespaces/a\nX-Injected: 1", "h", b"", None)
    head = request_head("GET", "/", "h", header_lines([("Impersonate-Group", "a"), ("Impersonate-Group", "b")]), None)
    assert head == b"GET / HTTP/1.1\r\nHost: h\r\nImpersonate-Group: a\r\nImpersonate-Group: b\r\n\r\n"


def test_the_parser_keeps_its_place_across_pieces_and_answers():
    """The bulk sender feeds bytes as they arrive on a non-blocking socket; two answers
    and a chunked body split anywhere come out whole, in order, nothing left over."""
    body = b'{"metadata":{"annotations":{"a":"' + b"x" * 5000 + b'"}}}'
    chunks = b"".join(
        b"%x\r\n%s\r\n" % (len(body[i : i + 2048]), body[i : i + 2048]) for i in range(0, len(body), 2048)
    )
    stream = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n" + chunks + b"0\r\n\r\n"
        b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{}"
    )
    for piece in (1, 13, 2048, len(stream)):
        parser, buf, answers = Parser(), bytearray(), []
        for i in range(0, len(stream), piece):
            buf += stream[i : i + piece]
            while (answer := parser.feed(buf)) is not None:
                answers.append(answer)
        assert [(a.status, a.data) for a in answers] == [(200, body), (404, b"{}")]  # Transfer-Encoding wins
        assert not buf


def test_a_body_to_the_end_of_the_connection_ends_there():
    parser, buf = Parser(), bytearray(b"HTTP/1.1 200 OK\r\n\r\npart")
    assert parser.feed(buf) is None
    buf += b" two"
    assert parser.feed(buf) is None
    answer = parser.at_eof(buf)
    assert answer.data == b"part two" and answer.will_close
    with pytest.raises(ConnectionResetError):
        Parser().at_eof(bytearray(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort"))


def test_an_answer_without_a_body_to_a_request_without_one():
    parser = Parser()
    parser.expect_body = False  # CONNECT: what follows the head is the tunnel's
    buf = bytearray(b"HTTP/1.1 200 Connection established\r\n\r\n\x16\x03\x01")
    answer = parser.feed(buf)
    assert answer is not None and answer.status == 200 and bytes(buf) == b"\x16\x03\x01"


def test_a_watch_is_read_chunk_by_chunk_and_ends_where_the_reader_says():
    # The wait for deleted CRDs ends at the event it waits for, with the stream still open.
    events = [b'{"type":"MODIFIED"}\n', b'{"type":"DELETED"}\n', b'{"type":"never read"}\n']
    stream = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events)
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    seen = []

    def on_chunk(data):
        seen.append(data)
        return b"DELETED" in data

    parser, buf = Parser(), bytearray(head + stream)
    parser.on_chunk = on_chunk
    response = parser.feed(buf)
    assert response is not None and response.status == 200
    assert response.data == b"" and response.will_close  # cut short: not to be used again
    assert seen == events[:2]
    error = b"HTTP/1.1 410 Gone\r\nTransfer-Encoding: chunked\r\n\r\n5\r\ngone!\r\n0\r\n\r\n"
    parser, buf = Parser(), bytearray(error)
    parser.on_chunk = on_chunk
    assert parser.feed(buf).data == b"gone!"  # an error's body is read whole, not streamed


def test_headers_are_read_by_any_case_and_a_repeated_one_keeps_its_last_value():
    """The framing fields are found in the head without building a dict per answer (it
    cost a fifth of the bulk thread's parsing); every header is still there on asking."""
    answer = (
        b"HTTP/1.1 429 Too Many Requests\r\nAudit-Id: a\r\nX-Content-Length-Note: 99\r\nRETRY-AFTER: 1\r\n"
        b"retry-after: 2 \r\nCONTENT-length: 4\r\nConnection: Close\r\n\r\nbody"
    )
    response, _ = exchange(answer)
    assert (response.status, response.data, response.will_close) == (429, b"body", True)
    assert response.headers.get("retry-after") == "2" and response.headers["audit-id"] == "a"
    assert response.headers.get("warning") is None and "x-content-length-note" in response.headers
    assert dict(response.headers) == {
        "audit-id": "a",
        "x-content-length-note": "99",
        "retry-after": "2",
        "content-length": "4",
        "connection": "Close",
    }


def test_a_length_in_another_header_value_does_not_frame_the_body():
    answer = b"HTTP/1.1 200 OK\r\nX-Note: x\r\n content-length: 1\r\nContent-Length: 3\r\n\r\nabc"
    response, _ = exchange(answer)
    assert response.data == b"abc"
