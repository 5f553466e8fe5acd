"""Writes image_transform_tf.txt: TensorFlow's ImageProjectiveTransformV3
(what Keras' RandomRotation, RandomZoom and RandomTranslation call) on one
small image for fixed affine matrices, every fill mode and interpolation,
and Keras' resize with crop_to_aspect_ratio (RandomCrop's centre crop:
tf.image.resize's bilinear of the centred window). ImageTransformTest
checks runtime/core/ImageTransform.h's taps against these numbers.

Needs TensorFlow (bench/keras-venv.sh makes a venv with it):
  python gen_image_transform_tf.py > image_transform_tf.txt
"""
import math

import numpy as np
import tensorflow as tf

H, W, C = 5, 7, 2
rng = np.random.default_rng(7)
image = rng.uniform(-1, 1, (H, W, C)).astype(np.float32)


def row(values):
    return " ".join("%.9g" % v for v in np.asarray(values).ravel())


print(H, W, C)
print(row(image))
cases = []
for trial in range(6):
    angle = rng.uniform(-math.pi, math.pi)
    scale = rng.uniform(0.5, 2.0)
    c, s = math.cos(angle), math.sin(angle)
    cases.append([scale * c, -scale * s, rng.uniform(-8, 8),
                  scale * s, scale * c, rng.uniform(-8, 8)])
for matrix in cases:
    for fill in ["reflect", "wrap", "constant", "nearest"]:
        for interpolation in ["bilinear", "nearest"]:
            out = tf.raw_ops.ImageProjectiveTransformV3(
                images=image[None],
                transforms=np.array([matrix + [0, 0]], np.float32),
                output_shape=[H, W], fill_value=0.5,
                interpolation=interpolation.upper(),
                fill_mode=fill.upper()).numpy()[0]
            print("affine", fill, interpolation, row(np.float32(matrix)))
            print(row(out))
# The centred 5x6 window resized to 3x4 (half-pixel centres, edges
# repeated), as keras.ops.image.resize(crop_to_aspect_ratio=True) does it.
import keras  # noqa: E402

out = keras.ops.convert_to_numpy(keras.ops.image.resize(
    image[None], (3, 4), crop_to_aspect_ratio=True))[0]
print("resize 3 4")
print(row(out))
