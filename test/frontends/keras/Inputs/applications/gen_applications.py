"""keras.applications models as JSON, for applications.test.

Regenerate with the bench venv (Keras 3.15, TensorFlow backend):

    $(bench/keras-venv.sh) test/frontends/keras/Inputs/applications/gen_applications.py \
        test/frontends/keras/Inputs/applications

Each family at the smallest input Keras accepts (32x32; Xception 71x71,
InceptionResNetV2 75x75), weights=None, classes=10, compiled with Adam and
categorical cross-entropy (so the JSON carries its compile config). Prints
each model's layer count and output shape. Only some families are kept in
the repository (their JSON is 85-260 KB each); docs/keras.md lists the
others, checked the same way by hand. ConvNeXtTiny is made with
include_preprocessing=False. The families in ARCHIVED are written as .keras
archives holding only config.json, deflated (InceptionResNetV2's 730 KB of
JSON to 15 KB; EfficientNet and MobileNetV3 6-7 KB instead of 160-260 KB).
"""
import os
import sys
import zipfile

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras  # noqa: E402

A = keras.applications
FAMILIES = {
    "mobilenet": (A.MobileNet, 32),
    "mobilenet_v2": (A.MobileNetV2, 32),
    "resnet50": (A.ResNet50, 32),
    "xception": (A.Xception, 71),
    "convnext_tiny": (A.ConvNeXtTiny, 32),
}
OPTIONS = {"convnext_tiny": {"include_preprocessing": False}}
# Squeeze-and-excite (broadcasting Multiply), Dropout(noise_shape),
# Normalization, and MobileNetV3's operation layers (x + 3.0, x * (1 / 6));
# InceptionResNetV2's CustomScaleLayer.
ARCHIVED = {
    "inception_resnet_v2": (A.InceptionResNetV2, 75),
    "efficientnet_b0": (A.EfficientNetB0, 32),
    "efficientnet_v2_b0": (A.EfficientNetV2B0, 32),
    "mobilenet_v3_small": (A.MobileNetV3Small, 32),
    "mobilenet_v3_large": (A.MobileNetV3Large, 32),
}
out = sys.argv[1]
for name, (build, size) in {**FAMILIES, **ARCHIVED}.items():
    keras.utils.set_random_seed(0)
    model = build(weights=None, input_shape=(size, size, 3), classes=10,
                  **OPTIONS.get(name, {}))
    model.compile(optimizer="adam", loss="categorical_crossentropy")
    if name in ARCHIVED:
        path = os.path.join(out, f"{name}.keras")
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED,
                             compresslevel=9) as archive:
            # A fixed date, so that the archive's bytes do not change.
            info = zipfile.ZipInfo("config.json", (2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, model.to_json())
    else:
        with open(os.path.join(out, f"{name}.json"), "w") as f:
            f.write(model.to_json())
    print(name, len(model.layers), "layers, output", model.output.shape)
