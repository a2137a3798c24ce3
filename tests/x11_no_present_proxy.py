"""An X server without the Present extension, for tests: a proxy in front of a real server
(Xvfb) that passes every byte through both ways, except that its answer to QueryExtension
"Present" says the extension is absent. Clients see a server without Present; everything else
is the real server's. (Debian's Xvfb and XWayland cannot be started without Present.)

The X11 protocol framing it follows: the client's setup (12 bytes, then the authorisation
name and data, each padded to 4), then requests (opcode, a byte, a 16-bit length in 4-byte
units; 0 there means BIG-REQUESTS, a 32-bit length follows), numbered 1, 2, 3 ... per
connection. The server's setup reply (8 bytes, then a 16-bit count of 4-byte units), then
32-byte errors, replies and events; replies and GenericEvents carry 4-byte units beyond the 32.
A reply's sequence number names the request it answers."""
import os
import select
import socket
import struct
import threading

QUERY_EXTENSION = 98


def _send(sock, data):
    try:
        sock.sendall(data)
        return True
    except OSError:
        return False


class NoPresentProxy:
    """with NoPresentProxy(':12') as p: p.display is a display without Present."""

    def __init__(self, upstream_display):
        self.upstream = "/tmp/.X11-unix/X" + upstream_display.lstrip(":").split(".")[0]
        self.hidden = 0  # QueryExtension "Present" answers rewritten

    def __enter__(self):
        for number in range(600 + os.getpid() % 300, 1000):
            path = f"/tmp/.X11-unix/X{number}"
            if os.path.exists(path) or os.path.exists(f"/tmp/.X{number}-lock"):
                continue
            self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                self.listener.bind(path)
            except OSError:
                self.listener.close()
                continue
            self.path = path
            self.display = f":{number}"
            break
        else:
            raise RuntimeError("no free X display number for the proxy")
        self.listener.listen(16)
        self.stop_r, self.stop_w = os.pipe()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        os.write(self.stop_w, b"x")
        self.thread.join(10)
        self.listener.close()
        os.unlink(self.path)
        os.close(self.stop_r)
        os.close(self.stop_w)

    def _accept(self):
        while True:
            ready, _, _ = select.select([self.listener, self.stop_r], [], [])
            if self.stop_r in ready:
                return
            client, _ = self.listener.accept()
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.connect(self.upstream)
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()

    def _pump(self, client, server):
        """One connection: both directions in one loop, parsing as bytes arrive."""
        to_server = b""
        to_client = b""
        setup_sent = setup_answered = False
        seq = 0
        hide = set()  # sequence numbers (low 16 bits) of QueryExtension "Present"
        open_ = True
        while open_:
            ready, _, _ = select.select([client, server, self.stop_r], [], [])
            if self.stop_r in ready:
                break
            for sock in ready:
                try:
                    data = sock.recv(65536)
                except OSError:  # the client died (a crashing test client resets it)
                    data = b""
                if not data:
                    open_ = False
                    break
                if sock is client:
                    to_server += data
                else:
                    to_client += data
            # Client to server: forward whole requests, noting the ones to answer ourselves.
            out = b""
            while True:
                if not setup_sent:
                    if len(to_server) < 12:
                        break
                    if to_server[:1] != b"l":
                        raise RuntimeError("the proxy speaks to little-endian clients only")
                    n, d = struct.unpack_from("<HH", to_server, 6)
                    size = 12 + (n + 3) // 4 * 4 + (d + 3) // 4 * 4
                    setup_sent = True
                else:
                    if len(to_server) < 4:
                        break
                    opcode, units = to_server[0], struct.unpack_from("<H", to_server, 2)[0]
                    if units == 0:
                        if len(to_server) < 8:
                            break
                        units = struct.unpack_from("<I", to_server, 4)[0]
                    size = units * 4
                    if len(to_server) < size:
                        break
                    seq = (seq + 1) & 0xFFFF
                    if opcode == QUERY_EXTENSION:
                        length = struct.unpack_from("<H", to_server, 4)[0]
                        if to_server[8:8 + length] == b"Present":
                            hide.add(seq)
                if len(to_server) < size:
                    break
                out += to_server[:size]
                to_server = to_server[size:]
            if out and not _send(server, out):
                break
            # Server to client: whole messages, the Present answer rewritten to "absent".
            out = b""
            while True:
                if not setup_answered:
                    if len(to_client) < 8:
                        break
                    size = 8 + struct.unpack_from("<H", to_client, 6)[0] * 4
                    if len(to_client) < size:
                        break
                    setup_answered = True
                    out += to_client[:size]
                    to_client = to_client[size:]
                    continue
                if len(to_client) < 32:
                    break
                kind = to_client[0] & 0x7F
                size = 32
                if kind in (1, 35):  # a reply, a GenericEvent
                    size += struct.unpack_from("<I", to_client, 4)[0] * 4
                if len(to_client) < size:
                    break
                msg = to_client[:size]
                to_client = to_client[size:]
                if kind == 1 and struct.unpack_from("<H", msg, 2)[0] in hide:
                    hide.discard(struct.unpack_from("<H", msg, 2)[0])
                    msg = msg[:8] + b"\0\0\0\0" + msg[12:]  # present, opcode, event, error
                    self.hidden += 1
                out += msg
            if out and not _send(client, out):
                break
        client.close()
        server.close()
