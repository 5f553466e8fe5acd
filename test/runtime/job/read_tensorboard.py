#!/usr/bin/env python3
"""Prints the scalars of a TensorBoard run directory, read by tensorboard.

  read_tensorboard.py RUN_DIR

RUN_DIR is laid out as Keras' TensorBoard callback lays out its log_dir:
RUN_DIR/train/events.out.tfevents.* and RUN_DIR/validation/... (event files
directly in RUN_DIR count as sub-directory "."). For each sub-directory with
event files it prints every scalar, sorted, one a line:

  <subdir> <tag> <step> <value>

with <value> the shortest decimal that gives back the stored float32.

Read with the real tensorboard package (2.21 works without TensorFlow: it
falls back to its own record reader), twice: EventAccumulator, which reads
simple_value as a scalar, and plugin_event_accumulator, the path
TensorBoard's server takes, which migrates simple_value into the "scalars"
plugin's tensors (data_compat.py); the two must agree.

Exits non-zero, naming the file, when a file fails to parse (a bad CRC, a
truncated record or bytes that are not an Event: tensorboard's own loader
stops quietly at those, so each file is first read strictly), when a file's
first event is not file_version "brain.Event:2", or when RUN_DIR holds no
event file.
"""

import os
import struct
import sys

from tensorboard.backend.event_processing import event_accumulator
from tensorboard.backend.event_processing import io_wrapper
from tensorboard.backend.event_processing import plugin_event_accumulator
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.tensorflow_stub import errors
from tensorboard.compat.tensorflow_stub import pywrap_tensorflow
from tensorboard.util import tensor_util


def fail(message):
    print("read_tensorboard.py: " + message, file=sys.stderr)
    sys.exit(1)


def check_file(path):
    """Reads every record of `path` strictly; returns how many there were."""
    # tensorboard's own reader, which raises on a bad record (TensorFlow's,
    # where installed, is not used: the check must not depend on it).
    reader = pywrap_tensorflow.PyRecordReader_New(path.encode())
    count = 0
    while True:
        try:
            reader.GetNext()
        except errors.OutOfRangeError:
            break
        except errors.DataLossError as e:
            # The stub's message starts with the path's repr; say it once.
            why = e.message.replace(repr(path.encode()), "").strip()
            fail("%s: record %d: %s" % (path, count, why))
        try:
            event = event_pb2.Event.FromString(reader.record())
        except Exception as e:  # protobuf's DecodeError and its kin
            fail("%s: record %d is not an Event: %s" % (path, count, e))
        if count == 0 and event.file_version != "brain.Event:2":
            fail(
                "%s: the first event's file_version is %r, not 'brain.Event:2'"
                % (path, event.file_version)
            )
        count += 1
    if count == 0:
        fail("%s: no events" % path)
    return count


def shortest(value):
    """The shortest %g that reads back as the same float32."""
    bits = struct.pack("<f", value)
    for digits in range(1, 10):
        text = "%.*g" % (digits, value)
        if struct.pack("<f", float(text)) == bits:
            return text
    return repr(value)


def scalars(directory):
    """[(tag, step, value)] from EventAccumulator, checked by the plugin one."""
    # Keep every event: TensorBoard drops a tag's later steps when a step
    # goes back (a restarted run); this prints what the files hold.
    plain = event_accumulator.EventAccumulator(
        directory,
        size_guidance={event_accumulator.SCALARS: 0},
        purge_orphaned_data=False,
    )
    plain.Reload()
    found = sorted(
        (tag, event.step, event.value)
        for tag in plain.Tags()[event_accumulator.SCALARS]
        for event in plain.Scalars(tag)
    )

    plugin = plugin_event_accumulator.EventAccumulator(
        directory,
        size_guidance={plugin_event_accumulator.TENSORS: 0},
        purge_orphaned_data=False,
    )
    plugin.Reload()
    migrated = []
    tags = (
        plugin.PluginTagToContent("scalars")
        if "scalars" in plugin.ActivePlugins()
        else {}
    )
    for tag in tags:
        for event in plugin.Tensors(tag):
            array = tensor_util.make_ndarray(event.tensor_proto)
            migrated.append((tag, event.step, float(array.item())))
    if sorted(migrated) != found:
        fail(
            "%s: EventAccumulator read %r but TensorBoard's plugin path read %r"
            % (directory, found, sorted(migrated))
        )
    return found


def main(argv):
    if len(argv) != 2:
        print("usage: " + __doc__.splitlines()[2].strip(), file=sys.stderr)
        return 2
    run = argv[1]
    if not os.path.isdir(run):
        fail("%s: not a directory" % run)

    subdirs = sorted(
        name
        for name in os.listdir(run)
        if os.path.isdir(os.path.join(run, name))
    )
    lines, files = [], 0
    for subdir in ["."] + subdirs:
        directory = os.path.normpath(os.path.join(run, subdir))
        events = sorted(
            name
            for name in os.listdir(directory)
            if io_wrapper.IsSummaryEventsFile(os.path.join(directory, name))
        )
        if not events:
            continue
        for name in events:
            check_file(os.path.join(directory, name))
        files += len(events)
        lines += [(subdir,) + scalar for scalar in scalars(directory)]
    if files == 0:
        fail("%s: no event files (events.out.tfevents.*) in it or its "
             "sub-directories" % run)
    for subdir, tag, step, value in sorted(lines):
        print("%s %s %d %s" % (subdir, tag, step, shortest(value)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
