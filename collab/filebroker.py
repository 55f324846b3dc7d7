"""kombu's filesystem transport, as the embedded default's broker, with whole messages only.

kombu's own publisher creates a message's file under its final name and then writes it, so a
worker polling the folder at that moment can take the file while it is still empty: it reads
no JSON, and the worker stops with an unrecoverable error (seen under a flood of commits). Here
a message is written under a name no consumer reads (``.part``) and renamed into place, which
is atomic on one filesystem: a consumer sees the whole message or none of it.

A consumer takes a message by renaming it, within the queue's folder, to a name no other
consumer reads (``.taken``): of two workers racing for one message, one rename succeeds and
the other finds the file gone (kombu's own moves it to the temporary directory, which may be
another filesystem, where a move is a copy that both could make).

A message is still deleted as soon as it is taken, as kombu does: one taken by a worker that
is killed is lost. The sweepers and beat entries re-drive what such a task left undone (see
the task table in collab/settings/base.py).
"""

import os
import uuid
from queue import Empty
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = final + ".part"
        try:
            with open(partial, "wb") as file:
                file.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _get(self, queue):
        wanted = f"{queue}.msg"
        for name in sorted(os.listdir(self.data_folder_in)):
            if name.partition(".")[2] != wanted:
                continue
            source = os.path.join(self.data_folder_in, name)
            taken = f"{source}.{os.getpid()}.taken"
            try:
                os.rename(source, taken)
            except OSError:
                continue  # another consumer took it first
            try:
                with open(taken, "rb") as file:
                    payload = file.read()
                if self.store_processed:
                    os.replace(taken, os.path.join(self.processed_folder, name))
                else:
                    os.remove(taken)
            except OSError as exc:
                raise ChannelError(f"Cannot read file {taken!r} from queue.") from exc
            return loads(bytes_to_str(payload))
        raise Empty()


class Transport(filesystem.Transport):
    Channel = Channel
