"""Oracle of graph's reduced-precision rounding for the mixed_bfloat16
fixtures: "round to nearest even after each op Keras runs in bfloat16".

The fixtures in Inputs/mixed_precision/{mlp_bfloat16, mlp_bfloat16_bf16_head,
cnn_bfloat16} (keras_mixed_precision.py) hold what TensorFlow's CPU kernels
compute. Those kernels do not round one way: on an x86-64 CPU without
AVX512-BF16 a bf16 MatMul (and its two gradient MatMuls) computes in float32
and TRUNCATES to bf16, TanhGrad rounds three times (r(dy*r(1-r(y*y)))),
BiasAddGrad sums row by row in bf16, Softmax is r(e*r(1/s)) with
e = r(exp(r(z - max))) and s summed in bf16 in order, Conv2DBackpropFilter
accumulates exact products in bf16 position by position, ... So
expected.safetensors holds the numbers of one machine's kernels, not of a
rounding rule. This script is an independent
numpy model (no TensorFlow) of the rule itself: every op that Keras/TF runs in
bfloat16 is computed exactly from its bf16 inputs (float64; bf16 products are
exact there) and its result rounded ONCE to bfloat16, round to nearest even:

  casts f32 -> bf16              RNE (bf16 -> f32 exact)
  MatMul, both gradient MatMuls  r(exact product)
  Add (Keras' bias add)          r(a + b)
  Tanh                           r(tanh(h))
  TanhGrad                       r(dy * (1 - y*y))
  Relu, ReluGrad                 exact (dy where y > 0)
  bias gradient (Sum over rows)  r(exact sum)
  Softmax                        r(softmax(z))
  SoftmaxGrad                    r(y * (dy - sum(dy*y)))
  Conv2D, its filter gradient    r(exact correlation) (the conv is the
                                 first layer: no input gradient is needed)
  MaxPool, its gradient          exact (the gradient goes to the first
                                 maximum of each window, row-major, as TF's
                                 CPU MaxPoolGrad does; windows do not overlap)
  Flatten/Reshape                exact

The float32 parts are computed in float32 numpy, in Keras' order of ops: the
float32 softmax head (Activation("softmax", dtype="float32") casts its input
to f32; the loss then takes the logits Keras cached on the softmax's output,
sparse_softmax_cross_entropy_with_logits: loss = log(sum exp(z - max)) -
(z_y - max), gradient (softmax - onehot)/batch), the loss of the bf16-head
case (the loss casts bf16 probabilities to f32, which loses the cached
logits, so Keras clips to [1e-7, 1 - 1e-7], takes log and applies
sparse_softmax_cross_entropy_with_logits to log p: gradient
((p/sum p) - onehot)/batch / p, zero where p was clipped),
BatchNormalization (input cast to f32; tf.nn.moments, biased variance;
tf.nn.batch_normalization's x*inv + (beta - mean*inv), inv =
gamma*rsqrt(var + eps); its backward the analytic formula in f32; moving
statistics m*0.99 + s*(1 - 0.99) in f32; output cast to bf16), the
optimizers (Keras 3 SGD: v -= g*lr; Adam as keras/src/optimizers/adam.py:
m += (g - m)*(1 - b1), v += (g*g - v)*(1 - b2), alpha = lr*sqrt(1 - b2^t) /
(1 - b1^t), var -= m*alpha / (sqrt(v) + eps)), and the epoch loss (Keras'
loss tracker, a Mean weighted by the batch size: the mean of the 3 step
losses). Gradients through a cast are cast back (bf16 -> f32 exact, f32 ->
bf16 RNE); the variables stay float32 and each layer reads them cast to bf16
(BatchNormalization's are not cast).

Flags (one of):
  (none)         the rule above; writes CASE/rne_expected.safetensors (every
                 variable, float32, expected.safetensors' names) and
                 CASE/rne_history.json ({"loss": [epoch loss]})
  --tf-rounding  TF's CPU kernels instead (those above; SoftmaxGrad as TF's
                 _SoftmaxGrad in bf16 ops, r(r(dy - r(sum r(dy*y)))*y)):
                 reproduces all three cases' expected.safetensors bit for
                 bit; prints, writes nothing
  --no-rounding  every op in float32 (the bf16 ops computed in float64 and
                 rounded once to float32): matches a float32 Keras run to
                 ~1e-7; prints, writes nothing
Each mode prints, per variable, ||oracle - expected|| / ||expected - init||
(expected = TF's fixture).

Regenerate (numpy only):

  build/test-venv/bin/python test/compare/bf16_rne_oracle.py \
      test/compare/Inputs/mixed_precision [CASE ...]

Each case: 24 examples of data.npz, 1 epoch of 3 steps at batch 8 in order
(no shuffling), from init.safetensors; mlp cases SGD(0.1), cnn Adam(0.01);
SparseCategoricalCrossentropy. The architectures are hard-coded here and
checked against the case's model.json.
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import read, write  # noqa: E402

F32 = np.float32
BATCH, STEPS = 8, 3
CASES = ("mlp_bfloat16", "mlp_bfloat16_bf16_head", "cnn_bfloat16")


def bf16_rne(x):
    """x (any float array) rounded once to bfloat16, ties to even, returned
    as float32. Works on the float64 value directly (no double rounding
    through float32); bf16 subnormals have quantum 2^-133."""
    x = np.asarray(x, np.float64)
    _, e = np.frexp(x)
    q = np.maximum(e - 8, -133)  # 8 significant bits
    y = np.ldexp(np.round(np.ldexp(x, -q)), q)  # np.round: half to even
    assert np.all(np.abs(y) <= 3.3895313892515355e38), "bf16 overflow"
    return y.astype(F32)


def bf16_trunc(x):
    """float32 x truncated to bfloat16 (TF's CPU bf16 MatMul)."""
    bits = np.asarray(x, F32).view(np.uint32) & np.uint32(0xFFFF0000)
    return bits.view(F32)


def f64(a):
    return np.asarray(a, np.float64)


class Rounding:
    """The ops Keras runs in bf16, under one of three rules: "rne" (exact,
    then one RNE to bf16), "tf" (TF's CPU kernels), "none" (float32)."""

    def __init__(self, mode):
        self.mode = mode

    def r(self, x):
        """One rounding of an exact (or float32) result to the compute
        dtype."""
        if self.mode == "none":
            return np.asarray(x, np.float64).astype(F32)
        return bf16_rne(x)

    cast = r  # f32 -> bf16 cast (and gradient of a bf16 -> f32 cast)

    def matmul(self, a, b):
        if self.mode == "tf":
            return bf16_trunc(np.asarray(a, F32) @ np.asarray(b, F32))
        return self.r(f64(a) @ f64(b))

    def add(self, a, b):
        if self.mode == "tf":
            return self.r(np.asarray(a, F32) + np.asarray(b, F32))
        return self.r(f64(a) + f64(b))

    def tanh(self, h):
        if self.mode == "tf":
            return self.r(np.tanh(np.asarray(h, F32)))
        return self.r(np.tanh(f64(h)))

    def tanh_grad(self, dy, y):
        if self.mode == "tf":
            r = self.r
            return r(dy * r(1 - r(y * y)))
        return self.r(f64(dy) * (1 - f64(y) * f64(y)))

    def sum_rows(self, d):
        """Gradient of a broadcast bias add: the sum over all but the last
        axis."""
        d = d.reshape(-1, d.shape[-1])
        if self.mode == "tf":  # BiasAddGrad: row by row in bf16
            acc = np.zeros(d.shape[1], F32)
            for row in d:
                acc = self.r(acc + row)
            return acc
        return self.r(f64(d).sum(0))

    def softmax(self, z):
        if self.mode == "tf":
            r = self.r
            e = r(np.exp(r(z - z.max(-1, keepdims=True))))
            s = np.zeros(e.shape[:-1] + (1,), F32)
            for j in range(e.shape[-1]):  # the sum in bf16, in order
                s = r(s + e[..., j:j + 1])
            return r(e * r(1 / s))
        z = f64(z)
        e = np.exp(z - z.max(-1, keepdims=True))
        return self.r(e / e.sum(-1, keepdims=True))

    def softmax_grad(self, dy, y):
        if self.mode == "tf":  # TF's _SoftmaxGrad in bf16 ops (a guess)
            r = self.r
            s = r(r(dy * y).sum(-1, keepdims=True))
            return r(r(dy - s) * y)
        dy, y = f64(dy), f64(y)
        return self.r(y * (dy - (dy * y).sum(-1, keepdims=True)))

    def conv(self, patches, kernel):
        """patches [N, H, W, K] (im2col of the bf16 input) @ kernel [K, C]."""
        if self.mode == "tf":  # Conv2D rounds to nearest even
            return self.r(np.asarray(patches, F32) @ np.asarray(kernel, F32))
        return self.r(f64(patches) @ f64(kernel))

    def conv_filter_grad(self, patches, dy):
        p = patches.reshape(-1, patches.shape[-1])
        d = dy.reshape(-1, dy.shape[-1])
        if self.mode == "tf":  # accumulates in bf16, position by position
            acc = np.zeros((p.shape[1], d.shape[1]), F32)
            for pi, di in zip(p.astype(np.float64), d.astype(np.float64)):
                acc = self.r(acc + np.outer(pi, di))
            return acc
        return self.r(f64(p).T @ f64(d))


# float32 parts ---------------------------------------------------------

def xent_logits(z, y):
    """sparse_softmax_cross_entropy_with_logits in f32, averaged over the
    batch: (mean loss, d mean / d z)."""
    z = np.asarray(z, F32)
    shifted = z - z.max(-1, keepdims=True)
    e = np.exp(shifted)
    s = e.sum(-1, keepdims=True)
    rows = np.arange(len(y))
    losses = np.log(s)[:, 0] - shifted[rows, y]
    grad = e / s
    grad[rows, y] -= F32(1)
    n = F32(len(y))
    return losses.sum(dtype=F32) / n, grad * (F32(1) / n)


def xent_probs(p, y):
    """Keras' sparse categorical crossentropy of probabilities (f32): clip to
    [eps, 1 - eps], log, sparse_softmax_cross_entropy_with_logits."""
    p = np.asarray(p, F32)
    lo, hi = F32(1e-7), F32(1 - 1e-7)
    pc = np.clip(p, lo, hi)
    loss, dlog = xent_logits(np.log(pc), y)
    dp = dlog * (F32(1) / pc)
    dp[(p < lo) | (p > hi)] = 0
    return loss, dp


def bn_forward(x, gamma, beta, eps):
    """tf.nn.moments over all but the channel axis + tf.nn.batch_normalization
    in f32."""
    axes = tuple(range(x.ndim - 1))
    mean = x.mean(axes, dtype=F32)
    var = np.square(x - mean).mean(axes, dtype=F32)
    inv = F32(1) / np.sqrt(var + F32(eps)) * gamma
    out = x * inv + (beta - mean * inv)
    return out, (x, mean, var, gamma, eps)


def bn_backward(dy, saved):
    x, mean, var, gamma, eps = saved
    axes = tuple(range(x.ndim - 1))
    rstd = F32(1) / np.sqrt(var + F32(eps))
    xc = x - mean
    dbeta = dy.sum(axes, dtype=F32)
    dyxc = (dy * xc).sum(axes, dtype=F32)
    dgamma = dyxc * rstd
    n = F32(np.prod([x.shape[a] for a in axes]))
    dx = gamma * rstd * (dy - dbeta / n - xc * (dyxc / n) * rstd * rstd)
    return dx.astype(F32), dgamma.astype(F32), dbeta.astype(F32)


class SGD:
    def __init__(self, lr):
        self.lr = F32(lr)

    def apply(self, params, grads):
        for k, g in grads.items():
            params[k] = (params[k] - np.asarray(g, F32) * self.lr).astype(F32)


class Adam:
    def __init__(self, lr, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
        self.lr, self.b1, self.b2, self.eps = lr, beta_1, beta_2, epsilon
        self.m, self.v, self.t = {}, {}, 0

    def apply(self, params, grads):
        self.t += 1
        t = F32(self.t)
        b1p = np.power(F32(self.b1), t)
        b2p = np.power(F32(self.b2), t)
        alpha = F32(self.lr) * np.sqrt(F32(1) - b2p) / (F32(1) - b1p)
        for k, g in grads.items():
            g = np.asarray(g, F32)
            m = self.m.get(k, np.zeros_like(g))
            v = self.v.get(k, np.zeros_like(g))
            m = m + (g - m) * F32(1 - self.b1)
            v = v + (g * g - v) * F32(1 - self.b2)
            self.m[k], self.v[k] = m, v
            params[k] = (params[k] - (m * alpha) / (np.sqrt(v) + F32(self.eps))
                         ).astype(F32)


# models ------------------------------------------------------------------

def layers_of(model):
    return {l["config"]["name"]: l for l in model["config"]["layers"]}


def check_model(name, model):
    """The architecture hard-coded below is the one model.json holds."""
    ls = layers_of(model)
    want = {"input_layer": "InputLayer"}

    def policy(layer):
        return layer["config"]["dtype"]["config"]["name"]

    if name.startswith("mlp"):
        head = name == "mlp_bfloat16"
        want.update(hidden="Dense", out="Dense")
        if head:
            want["softmax"] = "Activation"
        assert ls["input_layer"]["config"]["batch_shape"] == [None, 5]
        assert ls["hidden"]["config"]["units"] == 7
        assert ls["hidden"]["config"]["activation"] == "tanh"
        assert ls["out"]["config"]["units"] == 5
        assert ls["out"]["config"]["activation"] == (
            "linear" if head else "softmax")
        if head:
            assert ls["softmax"]["config"]["activation"] == "softmax"
            assert policy(ls["softmax"]) == "float32"
        for k in ("hidden", "out"):
            assert policy(ls[k]) == "mixed_bfloat16"
        opt = ("SGD", {"learning_rate": 0.1, "momentum": 0.0})
    else:
        want.update(conv="Conv2D", pool="MaxPooling2D",
                    bn="BatchNormalization", flatten="Flatten", out="Dense",
                    softmax="Activation")
        c = ls["conv"]["config"]
        assert ls["input_layer"]["config"]["batch_shape"] == [None, 8, 8, 1]
        assert (c["filters"], c["kernel_size"], c["strides"], c["padding"],
                c["activation"]) == (4, [3, 3], [1, 1], "valid", "relu")
        p = ls["pool"]["config"]
        assert (p["pool_size"], p["strides"], p["padding"]) == (
            [2, 2], [2, 2], "valid")
        b = ls["bn"]["config"]
        assert (b["axis"], b["momentum"], b["epsilon"]) == (-1, 0.99, 0.001)
        assert ls["out"]["config"]["units"] == 5
        assert ls["out"]["config"]["activation"] == "linear"
        assert policy(ls["softmax"]) == "float32"
        for k in ("conv", "pool", "bn", "flatten", "out"):
            assert policy(ls[k]) == "mixed_bfloat16"
        opt = ("Adam", {"learning_rate": 0.01, "beta_1": 0.9,
                        "beta_2": 0.999, "epsilon": 1e-7, "amsgrad": False})
    assert {k: v["class_name"] for k, v in ls.items()} == want, ls.keys()
    cc = model["compile_config"]
    assert cc["optimizer"]["class_name"] == opt[0]
    for k, v in opt[1].items():
        got = cc["optimizer"]["config"][k]
        assert (abs(got - v) < 1e-7 if isinstance(v, float) else got == v), k
    loss = cc["loss"]
    assert loss["class_name"] == "SparseCategoricalCrossentropy"
    assert loss["config"]["from_logits"] is False
    assert loss["config"]["reduction"] == "sum_over_batch_size"


def mlp_step(R, params, x, y, head):
    """One step of Dense(7, tanh) -> Dense(5) -> f32 softmax (head) or
    Dense(5, softmax) in bf16: (loss, gradients)."""
    xb = R.cast(x)
    W1, b1, W2, b2 = (R.cast(params[k]) for k in (
        "hidden/kernel", "hidden/bias", "out/kernel", "out/bias"))
    t = R.tanh(R.add(R.matmul(xb, W1), b1))
    z = R.add(R.matmul(t, W2), b2)
    if head:
        loss, dzf = xent_logits(z, y)
        dz = R.cast(dzf)
    else:
        p = R.softmax(z)
        loss, dpf = xent_probs(p, y)
        dz = R.softmax_grad(R.cast(dpf), p)
    g = {"out/bias": R.sum_rows(dz), "out/kernel": R.matmul(t.T, dz)}
    dh = R.tanh_grad(R.matmul(dz, W2.T), t)
    g["hidden/bias"] = R.sum_rows(dh)
    g["hidden/kernel"] = R.matmul(xb.T, dh)
    return loss, g


def im2col(x, k):
    """x [N, H, W, C] -> patches [N, H-k+1, W-k+1, k*k*C], in the order of a
    [k, k, C, F] kernel reshaped to [k*k*C, F]."""
    n, h, w, c = x.shape
    oh, ow = h - k + 1, w - k + 1
    cols = [x[:, i:i + oh, j:j + ow, :] for i in range(k) for j in range(k)]
    return np.stack(cols, axis=3).reshape(n, oh, ow, k * k * c)


def maxpool2(x):
    """2x2/2 max pool (valid) and, per output, the row-major index in its
    window of the first maximum."""
    n, h, w, c = x.shape
    win = x[:, :h // 2 * 2, :w // 2 * 2, :].reshape(
        n, h // 2, 2, w // 2, 2, c).transpose(0, 1, 3, 5, 2, 4).reshape(
        n, h // 2, w // 2, c, 4)
    arg = win.argmax(-1)  # first maximum
    return win.max(-1), arg, x.shape


def maxpool2_grad(dy, arg, shape):
    n, h, w, c = shape
    oh, ow = h // 2, w // 2
    win = np.zeros((n, oh, ow, c, 4), dy.dtype)
    np.put_along_axis(win, arg[..., None], dy[..., None], axis=-1)
    dx = np.zeros(shape, dy.dtype)
    dx[:, :oh * 2, :ow * 2, :] = win.reshape(n, oh, ow, c, 2, 2).transpose(
        0, 1, 4, 2, 5, 3).reshape(n, oh * 2, ow * 2, c)
    return dx


def cnn_step(R, params, x, y):
    """Conv2D(4, 3, relu) -> MaxPool(2) -> BN (f32) -> Flatten -> Dense(5)
    -> f32 softmax. Updates BN's moving statistics in params; (loss,
    gradients)."""
    kernel = params["conv/kernel"]
    ksize, cin, cout = kernel.shape[0], kernel.shape[2], kernel.shape[3]
    xb = R.cast(x)
    K = R.cast(kernel).reshape(ksize * ksize * cin, cout)
    cb = R.cast(params["conv/bias"])
    patches = im2col(xb, ksize)
    a = R.add(R.conv(patches, K), cb)
    act = np.maximum(a, F32(0))
    pooled, arg, pshape = maxpool2(act)
    # BatchNormalization: f32 inside, bf16 out.
    gamma, beta = params["bn/gamma"], params["bn/beta"]
    bn, saved = bn_forward(pooled.astype(F32), gamma, beta, 0.001)
    mean, var = saved[1], saved[2]
    mom = 0.99
    params["bn/moving_mean"] = (params["bn/moving_mean"] * F32(mom)
                                + mean * F32(1.0 - mom)).astype(F32)
    params["bn/moving_variance"] = (params["bn/moving_variance"] * F32(mom)
                                    + var * F32(1.0 - mom)).astype(F32)
    f = R.cast(bn).reshape(len(x), -1)
    W, b = R.cast(params["out/kernel"]), R.cast(params["out/bias"])
    z = R.add(R.matmul(f, W), b)
    loss, dzf = xent_logits(z, y)
    dz = R.cast(dzf)
    g = {"out/bias": R.sum_rows(dz), "out/kernel": R.matmul(f.T, dz)}
    df = R.matmul(dz, W.T).reshape(bn.shape)
    dpooled, g["bn/gamma"], g["bn/beta"] = bn_backward(df.astype(F32), saved)
    dact = maxpool2_grad(R.cast(dpooled), arg, pshape)
    da = np.where(act > 0, dact, F32(0))
    g["conv/bias"] = R.sum_rows(da)
    g["conv/kernel"] = R.conv_filter_grad(patches, da).reshape(kernel.shape)
    return loss, g


def run(case_dir, name, mode):
    with open(os.path.join(case_dir, "model.json")) as fh:
        check_model(name, json.load(fh))
    data = np.load(os.path.join(case_dir, "data.npz"))
    x, y = data["x"].astype(F32), data["y"].astype(np.int64)
    assert len(x) == BATCH * STEPS, x.shape
    params = {k: v.astype(F32) for k, v in
              read(os.path.join(case_dir, "init.safetensors")).items()}
    R = Rounding(mode)
    opt = Adam(0.01) if name.startswith("cnn") else SGD(0.1)
    total, count = F32(0), F32(0)
    for step in range(STEPS):
        xs, ys = x[step * BATCH:(step + 1) * BATCH], y[step * BATCH:
                                                       (step + 1) * BATCH]
        if name.startswith("cnn"):
            loss, grads = cnn_step(R, params, xs, ys)
        else:
            loss, grads = mlp_step(R, params, xs, ys,
                                   head=name == "mlp_bfloat16")
        opt.apply(params, grads)
        total += F32(loss) * F32(len(xs))  # Keras' loss tracker (Mean)
        count += F32(len(xs))
    return params, float(total / count)


def report(label, result, ref, init):
    for k in ref:
        num = float(np.linalg.norm(f64(result[k]) - f64(ref[k])))
        den = float(np.linalg.norm(f64(ref[k]) - f64(init[k])))
        print("  %-22s ||%s - tf|| / ||tf - init|| = %.3g  (max|diff| %.3g)"
              % (k, label, num / den if den else float("nan"),
                 float(np.abs(result[k] - ref[k]).max())))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("directory")
    parser.add_argument("cases", nargs="*")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--tf-rounding", action="store_true")
    mode.add_argument("--no-rounding", action="store_true")
    parser.add_argument("--compare", metavar="FILE_PATTERN",
                        help="also compare with FILE_PATTERN %% case (a "
                        "safetensors file, e.g. a float32 Keras run)")
    args = parser.parse_intermixed_args()
    mode = "tf" if args.tf_rounding else "none" if args.no_rounding else "rne"
    label = {"rne": "rne", "tf": "tfr", "none": "f32"}[mode]
    for name in args.cases or CASES:
        assert name in CASES, name
        case_dir = os.path.join(args.directory, name)
        params, loss = run(case_dir, name, mode)
        ref = read(os.path.join(case_dir, "expected.safetensors"))
        init = read(os.path.join(case_dir, "init.safetensors"))
        assert set(params) == set(ref), (sorted(params), sorted(ref))
        out = {k: params[k].astype(F32) for k in ref}
        with open(os.path.join(case_dir, "history.json")) as fh:
            tf_loss = json.load(fh)["loss"][0]
        print("%s [%s] epoch loss %.9g (tf %.9g)" % (name, mode, loss,
                                                     tf_loss))
        bitexact = all(np.array_equal(out[k], ref[k]) for k in ref)
        print("  bit-exact vs expected.safetensors: %s" % bitexact)
        report(label, out, ref, init)
        if args.compare:
            other = read(args.compare % name)
            print("  vs %s: max|diff| %s" % (args.compare % name, {
                k: "%.3g" % float(np.abs(out[k] - other[k]).max())
                for k in ref}))
        if mode == "rne":
            write(os.path.join(case_dir, "rne_expected.safetensors"), out)
            with open(os.path.join(case_dir, "rne_history.json"), "w") as fh:
                json.dump({"loss": [loss]}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
