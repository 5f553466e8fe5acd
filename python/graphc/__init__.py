"""graphc: Keras models compiled to a dataflow plan and trained in C++.

    import keras, graphc
    model = keras.Sequential([...])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    trainer = graphc.compile(model, batch_size=256, devices="cpu:2")
    history = trainer.fit(x_train, y_train, epochs=3, validation_split=0.1)
    trainer.evaluate(x_test, y_test)      # {"loss": ..., "accuracy": ...}
    trainer.to_keras(model)               # the trained weights, in Keras

docs/python.md has the whole interface.
"""

from . import callbacks, distribute
from .errors import (DeviceError, Error, InvalidDataError, InvalidModelError,
                     UnsupportedError, WorkerLostError)
from .trainer import History, Trainer, compile

__all__ = [
    "compile", "Trainer", "History", "callbacks", "distribute", "Error",
    "InvalidModelError", "InvalidDataError", "DeviceError", "WorkerLostError",
    "UnsupportedError",
]
