"""keras.applications models as JSON, for applications.test.

Regenerate with the bench venv (Keras 3.15, TensorFlow backend):

    $(bench/keras-venv.sh) test/frontends/keras/Inputs/applications/gen_applications.py \
        test/frontends/keras/Inputs/applications

Each family at the smallest input Keras accepts (32x32; Xception 71x71,
InceptionResNetV2 75x75), weights=None, classes=10, compiled with Adam and
categorical cross-entropy (so the JSON carries its compile config). Prints
each model's layer count and output shape. Only six families are kept in
the repository (their JSON is 85-170 KB each); docs/keras.md lists the
others, checked the same way by hand. ConvNeXtTiny is made with
include_preprocessing=False (its Normalization layer is not imported);
InceptionResNetV2's JSON (730 KB) is kept as a .keras archive holding only
config.json, deflated to 15 KB.
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
    "inception_resnet_v2": (A.InceptionResNetV2, 75),
}
OPTIONS = {"convnext_tiny": {"include_preprocessing": False}}
ARCHIVED = {"inception_resnet_v2"}
out = sys.argv[1]
for name, (build, size) in FAMILIES.items():
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
