"""TensorFlow's decode of the fixtures generate.py made, for ImageDecodeTest.

tf.io.decode_jpeg with its default dct_method ("", libjpeg's fast integer
IDCT): the pixels a Keras user's tf.data pipeline starts from, which our
decoder's fastIdct must reproduce. Raw bytes, row-major HxWxC, in
NAME.tf.rgb / NAME.tf.gray. Run with a python that has tensorflow (the one
bench/keras-venv.sh makes); rerun only when generate.py changes the JPEGs.

  PYTHONDONTWRITEBYTECODE=1 build/keras-venv/bin/python \\
      test/runtime/data/Inputs/images/generate-tf.py
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

for name, channels in (("rgb420", 3), ("photo", 3), ("gray", 1),
                       ("cmyk", 3)):
    data = tf.io.read_file(os.path.join(HERE, name + ".jpeg"))
    pixels = tf.io.decode_jpeg(data, channels=channels).numpy()
    suffix = ".tf.rgb" if channels == 3 else ".tf.gray"
    with open(os.path.join(HERE, name + suffix), "wb") as f:
        f.write(pixels.tobytes())
print("tensorflow", tf.__version__)
