"""Inputs of tf_keras2_losses.test: the focal, row and batch losses as
tf.keras 2 and Keras 3 serialize them, in one small model's compile_config.

Regenerate (tf_keras 2.21 and Keras 3 beside TensorFlow 2.21; the test
itself needs neither):

  /work/venvs/keras-tf/bin/python \\
      test/frontends/keras/Inputs/tf_keras2_losses/gen_tf_keras2_losses.py \\
      test/frontends/keras/Inputs/tf_keras2_losses

The model is test/compare/Inputs/pointwise_losses/categorical_hinge's
(Input((5,)) -> Dense(7, tanh) -> Dense(4)); only compile_config.loss
changes. tf.keras 2 writes reduction "auto", every option and the wrapped
function's name ("fn"); Keras 3 has no tf.keras 2 counterpart of Dice and
Tversky, so those come from Keras 3, with the options graph-import refuses
(a per-sample axis, a list of per-class alphas).
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BASE = os.path.join(HERE, "..", "..", "..", "..", "compare", "Inputs",
                    "pointwise_losses", "categorical_hinge", "model.json")


def main():
    out = sys.argv[1]
    import keras
    import tf_keras

    L2, L3 = tf_keras.losses, keras.losses
    losses = {
        "binary_focal": L2.serialize(L2.BinaryFocalCrossentropy(
            apply_class_balancing=True, alpha=0.4, gamma=1.5,
            from_logits=True, label_smoothing=0.1)),
        "categorical_focal": L2.serialize(L2.CategoricalFocalCrossentropy(
            alpha=0.6, gamma=3.0, label_smoothing=0.2)),
        "cosine_similarity": L2.serialize(L2.CosineSimilarity()),
        "categorical_hinge": L2.serialize(L2.CategoricalHinge()),
        "dice": L3.serialize(L3.Dice()),
        "tversky": L3.serialize(L3.Tversky(alpha=0.25, beta=0.75)),
        "error_dice_axis": L3.serialize(L3.Dice(axis=(1,))),
        "error_focal_alpha_list": L3.serialize(
            L3.CategoricalFocalCrossentropy(alpha=[0.1, 0.2, 0.3, 0.4])),
        "error_cosine_axis": L2.serialize(L2.CosineSimilarity(axis=0)),
    }
    with open(BASE) as f:
        model = json.load(f)
    for name, loss in losses.items():
        model["compile_config"]["loss"] = loss
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(model, f, indent=1)
        print(name, json.dumps(loss))


if __name__ == "__main__":
    main()
