"""graphc's exceptions: each carries the C++ message as graphrun prints it."""


class Error(Exception):
    """Every error graphc raises."""


class InvalidModelError(Error, ValueError):
    """The model cannot be imported or compiled (an unsupported layer, loss
    or optimizer; a model that is not compiled)."""


class InvalidDataError(Error, ValueError):
    """The arrays do not fit the model: shape, dtype, lengths, labels."""


class DeviceError(Error, RuntimeError):
    """The devices asked for are not there, or one failed."""


class WorkerLostError(Error, RuntimeError):
    """Another worker of an mpirun job failed or stopped answering."""


class UnsupportedError(Error, NotImplementedError):
    """A Keras argument graphc does not take yet."""


def from_result(result):
    """The exception for a failed job's result (Module.cpp's dict)."""
    code, message = result["code"], result["message"] or "the job failed"
    text = message.lower()
    if code == "timeout" or "worker" in text and ("lost" in text or "abort" in text):
        return WorkerLostError(message)
    if code == "invalid input":
        return InvalidDataError(message)
    if any(word in text for word in ("gpu", "cuda", "device")):
        return DeviceError(message)
    if any(word in text for word in ("--data", "array", "example", "label",
                                     "shape", "validation")):
        return InvalidDataError(message)
    return Error(message)
