//===- ImageTransformTest.cpp - Keras' random image layers ----------------===//
//
// runtime/core/ImageTransform.h against TensorFlow's numbers
// (Inputs/image_transform_tf.txt, from gen_image_transform_tf.py), and the
// reference kernels' draws: what each kind does to an image, that a batch
// split across replicas is transformed as one, and RandomContrast.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/ImageTransform.h"

#include "KernelTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

using namespace graph::runtime;
using namespace graph::runtime::testing;
namespace it = graph::runtime::image_transform;

namespace {

std::vector<double> readRow(std::istream &in, size_t n) {
  std::string line;
  std::getline(in, line);
  std::istringstream row(line);
  std::vector<double> v;
  double x;
  while (row >> x)
    v.push_back(x);
  EXPECT_EQ(v.size(), n);
  return v;
}

/// Samples one HWC image through taps().
std::vector<double> sample(const it::Spec &s, const it::Projection &p,
                           const std::vector<double> &image, int64_t channels) {
  std::vector<double> out(s.outHeight * s.outWidth * channels);
  for (int64_t oy = 0; oy < s.outHeight; ++oy)
    for (int64_t ox = 0; ox < s.outWidth; ++ox) {
      it::Taps t = it::taps(s, p, oy, ox);
      for (int64_t c = 0; c < channels; ++c) {
        double v = t.fillWeight * s.fillValue;
        for (int k = 0; k < t.count; ++k)
          v += t.weight[k] * image[t.index[k] * channels + c];
        out[(oy * s.outWidth + ox) * channels + c] = v;
      }
    }
  return out;
}

TEST(ImageTransform, TapsMatchTensorFlow) {
  std::ifstream in(std::string(GRAPH_SOURCE_DIR) +
                   "/test/runtime/reference/Inputs/image_transform_tf.txt");
  ASSERT_TRUE(in) << "missing fixture";
  int64_t h, w, c;
  in >> h >> w >> c;
  in.ignore();
  std::vector<double> image = readRow(in, h * w * c);
  int cases = 0;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream head(line);
    std::string what;
    head >> what;
    it::Spec s;
    s.inHeight = s.outHeight = h;
    s.inWidth = s.outWidth = w;
    it::Projection p;
    p.height = h;
    p.width = w;
    std::string label = line;
    if (what == "affine") {
      std::string fill, interpolation;
      head >> fill >> interpolation >> p.a0 >> p.a1 >> p.a2 >> p.b0 >> p.b1 >>
          p.b2;
      s.fill = fill == "reflect"    ? it::FillMode::reflect
               : fill == "wrap"     ? it::FillMode::wrap
               : fill == "constant" ? it::FillMode::constant
                                    : it::FillMode::nearest;
      s.interpolation = interpolation == "nearest"
                            ? it::Interpolation::nearest
                            : it::Interpolation::bilinear;
      s.fillValue = 0.5;
    } else {
      ASSERT_EQ(what, "resize");
      head >> s.outHeight >> s.outWidth;
      s.kind = it::Kind::center_crop;
      s.fill = it::FillMode::nearest;
      p = it::centerCrop(s);
    }
    std::vector<double> expected = readRow(in, s.outHeight * s.outWidth * c);
    std::vector<double> actual = sample(s, p, image, c);
    for (size_t k = 0; k < expected.size(); ++k)
      ASSERT_NEAR(actual[k], expected[k], 2e-5) << label << " element " << k;
    ++cases;
  }
  EXPECT_EQ(cases, 49);
}

KernelConfig config(const std::string &kind) {
  KernelConfig cfg;
  cfg.set("kind", kind).set("seed", int64_t{17});
  return cfg;
}

/// The reference kernel's output for `x` (NHWC) under `ctx`.
std::vector<double> transform(const KernelConfig &cfg, const Tensor &x,
                              std::vector<int64_t> outShape,
                              const KernelContext &ctx) {
  Tensor in = x, out = Tensor::f64(outShape);
  Status s = launch("random_image_transform", cfg, {&in}, {&out}, ctx);
  EXPECT_TRUE(s.isOk()) << s.message();
  return out.values();
}

TEST(ImageTransform, FlipMirrorsAboutHalfTheImages) {
  // 200 images of 1x3: each comes out as it was or mirrored, about half
  // mirrored; horizontal_and_vertical mirrors both axes at once, as Keras.
  for (std::string mode : {"horizontal", "horizontal_and_vertical"}) {
    std::vector<double> v;
    for (int n = 0; n < 200; ++n)
      for (double x : {1.0, 2.0, 3.0})
        v.push_back(n * 10 + x);
    Tensor x = Tensor::f64({200, 1, 3, 1}, v);
    KernelContext ctx;
    ctx.step = 3;
    std::vector<double> y =
        transform(config("flip").set("mode", mode), x, {200, 1, 3, 1}, ctx);
    int flipped = 0;
    for (int n = 0; n < 200; ++n) {
      bool same = y[3 * n] == v[3 * n] && y[3 * n + 2] == v[3 * n + 2];
      bool mirrored = y[3 * n] == v[3 * n + 2] && y[3 * n + 2] == v[3 * n];
      ASSERT_TRUE(same || mirrored) << mode << " image " << n;
      EXPECT_EQ(y[3 * n + 1], v[3 * n + 1]);
      flipped += mirrored;
    }
    EXPECT_GT(flipped, 70) << mode;
    EXPECT_LT(flipped, 130) << mode;
  }
}

TEST(ImageTransform, QuarterTurnRotatesExactly) {
  // factor [0.25, 0.25] is a quarter turn for every image; on a square
  // image the pixels land on pixels: output (y, x) = input (x, 3 - y)...
  // whichever way, the result is a permutation that matches numpy's rot90.
  std::vector<double> v(16);
  for (int k = 0; k < 16; ++k)
    v[k] = k;
  Tensor x = Tensor::f64({1, 4, 4, 1}, v);
  KernelConfig cfg = config("rotation");
  cfg.set("factor", std::vector<double>{0.25, 0.25});
  std::vector<double> y = transform(cfg, x, {1, 4, 4, 1}, {});
  // Output pixel (x, y) reads input (cx - (y - cy), cy + (x - cx)).
  for (int oy = 0; oy < 4; ++oy)
    for (int ox = 0; ox < 4; ++ox)
      EXPECT_NEAR(y[oy * 4 + ox], v[ox * 4 + (3 - oy)], 1e-12)
          << oy << "," << ox;
}

TEST(ImageTransform, ReplicasTransformAsOne) {
  // Four images at once, or two replicas of two: the same transforms.
  Tensor x = Tensor::f64({4, 5, 6, 2}, uniform(240, -1, 1, 5));
  KernelConfig cfg = config("zoom");
  cfg.set("height_factor", std::vector<double>{-0.5, 0.5});
  KernelContext ctx;
  ctx.step = 7;
  ctx.seed = 3;
  std::vector<double> whole = transform(cfg, x, {4, 5, 6, 2}, ctx);
  std::vector<double> values = x.values();
  for (int replica = 0; replica < 2; ++replica) {
    Tensor half =
        Tensor::f64({2, 5, 6, 2},
                    std::vector<double>(values.begin() + replica * 120,
                                        values.begin() + replica * 120 + 120));
    ctx.globalRowOffset = 2 * replica;
    std::vector<double> part = transform(cfg, half, {2, 5, 6, 2}, ctx);
    for (int k = 0; k < 120; ++k)
      ASSERT_EQ(part[k], whole[replica * 120 + k]) << replica << " " << k;
  }
  // Another step draws other zooms.
  ctx.globalRowOffset = 0;
  ctx.step = 8;
  EXPECT_NE(transform(cfg, x, {4, 5, 6, 2}, ctx), whole);
}

TEST(ImageTransform, CropTakesOneWindowPerStep) {
  // RandomCrop draws one window for the batch (as Keras); every image's
  // output is a contiguous window of it, the same offsets for all, and
  // the offsets vary across steps within the input.
  std::vector<double> v(2 * 6 * 7);
  for (size_t k = 0; k < v.size(); ++k)
    v[k] = static_cast<double>(k);
  Tensor x = Tensor::f64({2, 6, 7, 1}, v);
  std::set<std::pair<int, int>> offsets;
  for (int64_t step = 1; step <= 40; ++step) {
    KernelContext ctx;
    ctx.step = step;
    std::vector<double> y = transform(config("crop"), x, {2, 3, 4, 1}, ctx);
    int y0 = static_cast<int>(y[0]) / 7, x0 = static_cast<int>(y[0]) % 7;
    ASSERT_LE(y0, 3);
    ASSERT_LE(x0, 3);
    for (int n = 0; n < 2; ++n)
      for (int oy = 0; oy < 3; ++oy)
        for (int ox = 0; ox < 4; ++ox)
          ASSERT_EQ(y[(n * 3 + oy) * 4 + ox],
                    v[(n * 6 + y0 + oy) * 7 + x0 + ox]);
    offsets.insert({y0, x0});
  }
  EXPECT_GT(offsets.size(), 6u);
}

TEST(ImageTransform, CenterCropKeepsTheMiddle) {
  // A 6x6 image to 2x4: the centred 3x6 window (aspect 1:2), resized.
  it::Spec s;
  s.inHeight = s.inWidth = 6;
  s.outHeight = 2;
  s.outWidth = 4;
  it::Projection p = it::centerCrop(s);
  EXPECT_EQ(p.y0, 1);
  EXPECT_EQ(p.x0, 0);
  EXPECT_EQ(p.height, 3);
  EXPECT_EQ(p.width, 6);
}

TEST(ImageTransform, ContrastKeepsMeansAndClips) {
  // Unclipped, each image's channel mean is unchanged and deviations scale
  // by one factor in contrast_range; clipped values sit on the range.
  Tensor x = Tensor::f64({3, 4, 5, 2}, uniform(120, -1, 1, 9));
  KernelConfig cfg;
  cfg.set("seed", int64_t{2})
      .set("contrast_range", std::vector<double>{0.5, 1.5})
      .set("value_range", std::vector<double>{-10.0, 10.0});
  KernelContext ctx;
  ctx.step = 4;
  Tensor in = x, out = Tensor::f64({3, 4, 5, 2});
  RUN_OK("random_contrast", cfg, {&in}, {&out}, ctx);
  std::vector<double> xv = x.values(), yv = out.values();
  for (int n = 0; n < 3; ++n)
    for (int c = 0; c < 2; ++c) {
      double mx = 0, my = 0;
      for (int p = 0; p < 20; ++p) {
        mx += xv[(n * 20 + p) * 2 + c] / 20;
        my += yv[(n * 20 + p) * 2 + c] / 20;
      }
      EXPECT_NEAR(mx, my, 1e-12);
      double f = (yv[(n * 20) * 2 + c] - my) / (xv[(n * 20) * 2 + c] - mx);
      EXPECT_GE(f, 0.5);
      EXPECT_LE(f, 1.5);
      for (int p = 1; p < 20; ++p)
        EXPECT_NEAR(yv[(n * 20 + p) * 2 + c] - my,
                    f * (xv[(n * 20 + p) * 2 + c] - mx), 1e-9);
    }
  cfg.set("value_range", std::vector<double>{-0.2, 0.3});
  RUN_OK("random_contrast", cfg, {&in}, {&out}, ctx);
  for (double y : out.values()) {
    EXPECT_GE(y, -0.2);
    EXPECT_LE(y, 0.3);
  }
}

TEST(ImageTransform, RandomContrastClipsAndMasks) {
  // Where the clip holds an output at the range, no gradient passes
  // through that element itself (only through the mean).
  Tensor x = Tensor::f64({1, 2, 2, 1}, {-1.0, 0.0, 0.1, 2.0});
  KernelConfig cfg;
  cfg.set("seed", int64_t{2})
      .set("contrast_range", std::vector<double>{1.0, 1.0})
      .set("value_range", std::vector<double>{-0.5, 0.5});
  Tensor dy = Tensor::f64({1, 2, 2, 1}, {1.0, 1.0, 1.0, 1.0});
  Tensor dx = Tensor::f64({1, 2, 2, 1});
  RUN_OK("random_contrast_grad", cfg, {&dy, &x}, {&dx});
  // f = 1: dx = g, which is 0 where clipped (-1 and 2), 1 elsewhere.
  EXPECT_EQ(dx.values(), (std::vector<double>{0.0, 1.0, 1.0, 0.0}));
}

} // namespace
