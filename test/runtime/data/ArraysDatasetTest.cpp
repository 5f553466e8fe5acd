//===- ArraysDatasetTest.cpp - arrays: and csv: data against NumPy --------===//
//
// NumPy writes every fixture (np.savez, np.save, np.savetxt) and the values
// the dataset must hold, converted by NumPy itself (`astype('<f4').tofile`,
// labels as '<i4'), so the checks never trust our own reader. A memory-mapped
// source must give the very batches the in-memory one gives.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/ArraysDataset.h"

#include "IdxFileWriter.h"
#include "PythonFixture.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>

namespace graph::runtime::data::test {
namespace {

using ::testing::HasSubstr;

/// Equal bit for bit (so -0.0 differs from 0.0, and a NaN must be NaN).
::testing::AssertionResult sameFloats(const float *got,
                                      const std::vector<float> &want) {
  for (size_t i = 0; i < want.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0)
      return ::testing::AssertionFailure()
             << "value " << i << " is " << got[i] << ", NumPy says " << want[i];
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult sameFloats(const std::vector<float> &got,
                                      const std::vector<float> &want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure()
           << got.size() << " values, NumPy has " << want.size();
  return sameFloats(got.data(), want);
}

/// Every batch of a pipeline, failing the test on an error.
std::vector<Batch> collect(const Pipeline &p) {
  std::vector<Batch> batches;
  std::unique_ptr<BatchIterator> it;
  Status s = p.open(it);
  EXPECT_TRUE(s) << s.message();
  if (!s)
    return batches;
  for (;;) {
    Batch b;
    bool end = false;
    s = it->next(b, end);
    EXPECT_TRUE(s) << s.message();
    if (!s || end)
      return batches;
    batches.push_back(std::move(b));
  }
}

class ArraysDatasetTest : public TempDirTest {
protected:
  /// A model whose input 'pixels' takes examples of shape (3, 2).
  static ArraysOptions options() {
    ArraysOptions o;
    o.inputName = "pixels";
    o.shape = {3, 2};
    return o;
  }

  /// Opens `spec`, which must give a Dataset in memory.
  std::shared_ptr<const Dataset> openMemory(const std::string &spec,
                                            const ArraysOptions &o) {
    std::shared_ptr<const Dataset> memory;
    std::optional<MappedExamples> mapped;
    std::shared_ptr<const std::vector<float>> weights;
    Status s = openArrays(spec, o, memory, mapped, weights);
    EXPECT_TRUE(s) << s.message();
    EXPECT_TRUE(memory || !s) << spec << ": no dataset in memory";
    EXPECT_FALSE(mapped) << spec << ": mapped, expected in memory";
    return memory;
  }

  /// Opens `spec`, which must leave its features mapped.
  std::optional<MappedExamples> openMapped(const std::string &spec,
                                           const ArraysOptions &o) {
    std::shared_ptr<const Dataset> memory;
    std::optional<MappedExamples> mapped;
    std::shared_ptr<const std::vector<float>> weights;
    Status s = openArrays(spec, o, memory, mapped, weights);
    EXPECT_TRUE(s) << s.message();
    EXPECT_TRUE(mapped || !s) << spec << ": not mapped";
    EXPECT_EQ(memory, nullptr) << spec << ": in memory, expected mapped";
    return mapped;
  }

  /// The message of opening `spec`, which must fail as invalid input and
  /// set neither result.
  std::string openFails(const std::string &spec, const ArraysOptions &o) {
    std::shared_ptr<const Dataset> memory;
    std::optional<MappedExamples> mapped;
    std::shared_ptr<const std::vector<float>> weights;
    Status s = openArrays(spec, o, memory, mapped, weights);
    EXPECT_FALSE(s) << spec << " opened";
    EXPECT_EQ(s.code(), StatusCode::invalidInput) << s.message();
    EXPECT_EQ(memory, nullptr);
    EXPECT_FALSE(mapped);
    return s.message();
  }

  std::vector<float> floats(const std::string &name) {
    return readValues<float>(path(name));
  }
  std::vector<int32_t> ints(const std::string &name) {
    return readValues<int32_t>(path(name));
  }
};

//===-- in memory ---------------------------------------------------------===//

/// x: float64 (37, 3, 2) with values float32 must round (and one that
/// overflows it, and a -0.0); y: int64 class indices in [0, 7).
const char *kNpzScript = R"PY(
rng = np.random.default_rng(3)
x = rng.standard_normal((37, 3, 2)) * 10.0 ** rng.integers(-3, 4, (37, 3, 2))
x[0, 0, 0] = 1e300
x[0, 0, 1] = -0.0
x[1, 2, 1] = 2.0 ** -140
y = rng.integers(0, 7, 37)
y[5] = 6
np.savez(f'{d}/data.npz', x=x, y=y)
x.astype('<f4').tofile(f'{d}/x.f32')
y.astype('<i4').tofile(f'{d}/y.i32')
np.array([y.max() + 1], '<i4').tofile(f'{d}/classes.i32')
)PY";

TEST_F(ArraysDatasetTest, NpzBecomesNumpysFloat32) {
  ASSERT_TRUE(runPython(dir_.string(), kNpzScript));
  auto ds = openMemory("arrays:" + path("data.npz"), options());
  ASSERT_NE(ds, nullptr);
  EXPECT_EQ(ds->name, path("data.npz") + ": x");
  EXPECT_EQ(ds->shape, (ExampleShape{3, 2}));
  EXPECT_EQ(ds->size(), 37);
  EXPECT_TRUE(sameFloats(ds->images, floats("x.f32")));
  EXPECT_EQ(ds->labels, ints("y.i32"));
  EXPECT_EQ(ds->numClasses, ints("classes.i32").at(0));
  EXPECT_EQ(ds->numClasses, 7);
}

TEST_F(ArraysDatasetTest, ClassesOptionSetsTheClassCount) {
  ASSERT_TRUE(runPython(dir_.string(), kNpzScript));
  ArraysOptions o = options();
  o.classes = 10;
  auto ds = openMemory("arrays:" + path("data.npz"), o);
  ASSERT_NE(ds, nullptr);
  EXPECT_EQ(ds->numClasses, 10);
  EXPECT_EQ(ds->labels, ints("y.i32"));
}

//===-- memory-mapped -----------------------------------------------------===//

/// The same examples as several sources: x as float64 in an .npz, a
/// Fortran-order .npy pair, and uint8, bool and float16 .npy files; each
/// with NumPy's float32 conversion as NAME.f32.
const char *kMappedScript = R"PY(
rng = np.random.default_rng(11)
x = rng.standard_normal((37, 3, 2)) * 100.0
y = rng.integers(0, 5, 37)
y[0] = 4
np.savez(f'{d}/data.npz', x=x, y=y)
x.astype('<f4').tofile(f'{d}/data.f32')
np.save(f'{d}/y.npy', y)
xf = np.asfortranarray(x)
assert xf.flags.f_contiguous and not xf.flags.c_contiguous
np.save(f'{d}/fortran.npy', xf)
xf.astype('<f4').tofile(f'{d}/fortran.f32')
u8 = rng.integers(0, 256, (37, 3, 2)).astype(np.uint8)
np.save(f'{d}/u8.npy', u8)
u8.astype('<f4').tofile(f'{d}/u8.f32')
b = rng.random((37, 3, 2)) > 0.5
np.save(f'{d}/bool.npy', b)
b.astype('<f4').tofile(f'{d}/bool.f32')
h = (rng.standard_normal((37, 3, 2)) * 1000.0).astype(np.float16)
h[3, 1, 0] = np.float16(6e-8)
h[4, 0, 1] = -np.float16(0.0)
np.save(f'{d}/f16.npy', h)
h.astype('<f4').tofile(f'{d}/f16.f32')
y.astype('<i4').tofile(f'{d}/y.i32')
)PY";

TEST_F(ArraysDatasetTest, MappedBatchesEqualInMemoryBatches) {
  ASSERT_TRUE(runPython(dir_.string(), kMappedScript));
  struct Case {
    std::string spec;
    std::string expected;
    bool fortran;
  };
  std::string y = "," + path("y.npy");
  for (const Case &c :
       {Case{"arrays:" + path("data.npz"), "data.f32", false},
        Case{"arrays:" + path("fortran.npy") + y, "fortran.f32", true},
        Case{"arrays:" + path("u8.npy") + y, "u8.f32", false},
        Case{"arrays:" + path("bool.npy") + y, "bool.f32", false},
        Case{"arrays:" + path("f16.npy") + y, "f16.f32", false}}) {
    SCOPED_TRACE(c.spec);
    std::vector<float> want = floats(c.expected);
    ASSERT_EQ(want.size(), 37u * 6u);
    auto ds = openMemory(c.spec, options());
    ASSERT_NE(ds, nullptr);
    EXPECT_TRUE(sameFloats(ds->images, want));
    EXPECT_EQ(ds->labels, ints("y.i32"));

    ArraysOptions o = options();
    o.inMemoryBytes = 0;
    std::optional<MappedExamples> mapped = openMapped(c.spec, o);
    ASSERT_TRUE(mapped);
    EXPECT_EQ(mapped->shape, (ExampleShape{3, 2}));
    EXPECT_EQ(mapped->features->fortranOrder(), c.fortran);
    EXPECT_EQ(mapped->list->name, ds->name);
    EXPECT_EQ(mapped->list->labels, ds->labels);
    EXPECT_EQ(mapped->list->numClasses, ds->numClasses);
    EXPECT_EQ(mapped->list->numClasses, 5);

    // Two epochs, shuffled with one seed, in batches of 4 that run across
    // the epoch boundary: 74 examples give 18 batches.
    Pipeline memory(ds);
    memory.shuffle(16, 42).repeat(2).batch(4, LabelFormat::OneHot);
    Pipeline fromMap(mapped->list);
    fromMap.shuffle(16, 42)
        .repeat(2)
        .map(mapped->loader(), 2, mapped->shape)
        .batch(4, LabelFormat::OneHot);
    std::vector<Batch> a = collect(memory), b = collect(fromMap);
    ASSERT_EQ(a.size(), 18u);
    ASSERT_EQ(b.size(), a.size());
    for (size_t k = 0; k < a.size(); ++k) {
      SCOPED_TRACE("batch " + std::to_string(k));
      EXPECT_EQ(b[k].shape, a[k].shape);
      EXPECT_EQ(b[k].numClasses, a[k].numClasses);
      EXPECT_EQ(b[k].sourceIndices, a[k].sourceIndices);
      EXPECT_TRUE(sameFloats(b[k].images, a[k].images));
      EXPECT_TRUE(sameFloats(b[k].oneHotLabels, a[k].oneHotLabels));
      // And each row is NumPy's row of that example.
      for (size_t r = 0; r < b[k].sourceIndices.size(); ++r) {
        int64_t i = b[k].sourceIndices[r];
        ASSERT_GE(i, 0);
        ASSERT_LT(i, 37);
        EXPECT_TRUE(sameFloats(
            b[k].images.data() + r * 6,
            std::vector<float>(want.begin() + i * 6, want.begin() + i * 6 + 6)))
            << "example " << i;
      }
    }
  }
}

TEST_F(ArraysDatasetTest, LoaderRefusesAnIndexOutsideTheArray) {
  ASSERT_TRUE(runPython(dir_.string(), kMappedScript));
  ArraysOptions o = options();
  o.inMemoryBytes = 0;
  std::optional<MappedExamples> mapped =
      openMapped("arrays:" + path("u8.npy") + "," + path("y.npy"), o);
  ASSERT_TRUE(mapped);
  MapFn load = mapped->loader();
  Example e;
  e.index = 36;
  ASSERT_TRUE(load(e));
  std::vector<float> want = floats("u8.f32");
  EXPECT_TRUE(
      sameFloats(e.image, std::vector<float>(want.end() - 6, want.end())));
  e.index = 37;
  Status s = load(e);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("u8.npy: no example 37"));
}

TEST_F(ArraysDatasetTest, InMemoryBytesIsTheFloat32SizeOfX) {
  ASSERT_TRUE(runPython(dir_.string(), kMappedScript));
  // uint8 x of 37 * 6 bytes, 37 * 6 * 4 as float32: the float32 size counts.
  std::string spec = "arrays:" + path("u8.npy") + "," + path("y.npy");
  ArraysOptions o = options();
  o.inMemoryBytes = 37 * 6 * 4;
  EXPECT_NE(openMemory(spec, o), nullptr);
  o.inMemoryBytes = 37 * 6 * 4 - 1;
  EXPECT_TRUE(openMapped(spec, o));
}

//===-- labels ------------------------------------------------------------===//

TEST_F(ArraysDatasetTest, OneHotRowsBecomeClassIndices) {
  ASSERT_TRUE(runPython(dir_.string(), R"PY(
rng = np.random.default_rng(5)
x = rng.standard_normal((37, 3, 2)).astype(np.float32)
y = rng.integers(0, 4, 37)
y[2] = 3
np.savez(f'{d}/data.npz', x=x, y=np.eye(4, dtype=np.float32)[y])
np.savez(f'{d}/column.npz', x=x, y=y.reshape(37, 1))
y.astype('<i4').tofile(f'{d}/y.i32')
)PY"));
  ArraysOptions o = options();
  o.classes = 4;
  auto ds = openMemory("arrays:" + path("data.npz"), o);
  ASSERT_NE(ds, nullptr);
  EXPECT_EQ(ds->labels, ints("y.i32"));
  EXPECT_EQ(ds->numClasses, 4);
  // (N, 1) holds class indices, not one-hot rows of one class.
  auto column = openMemory("arrays:" + path("column.npz"), options());
  ASSERT_NE(column, nullptr);
  EXPECT_EQ(column->labels, ints("y.i32"));
  EXPECT_EQ(column->numClasses, 4);
  // One-hot rows of another width than the model's classes.
  o.classes = 5;
  EXPECT_THAT(openFails("arrays:" + path("data.npz"), o),
              HasSubstr("data.npz: y: one-hot rows of 4 classes; the model's "
                        "labels have 5"));
}

TEST_F(ArraysDatasetTest, RefusesOneHotRowsThatAreNotOneHot) {
  ASSERT_TRUE(runPython(dir_.string(), R"PY(
x = np.zeros((6, 3, 2))
eye = np.eye(3)[[0, 1, 2, 0, 1, 2]]
two = eye.copy(); two[4, 0] = 1
zeros = eye.copy(); zeros[3] = 0
soft = eye.copy(); soft[2] = [0.3, 0.7, 0]
nan = eye.copy(); nan[1, 2] = np.nan
for name, y in [('two', two), ('zeros', zeros), ('soft', soft), ('nan', nan)]:
    np.savez(f'{d}/{name}.npz', x=x, y=y)
)PY"));
  auto fails = [&](const std::string &name) {
    return openFails("arrays:" + path(name + ".npz"), options());
  };
  EXPECT_THAT(fails("two"),
              HasSubstr("two.npz: y: example 4: a one-hot label row must hold "
                        "one 1 and zeros; it holds 1.000000 at class 1"));
  EXPECT_THAT(fails("zeros"),
              HasSubstr("zeros.npz: y: example 3: the one-hot label row is "
                        "all zeros"));
  EXPECT_THAT(fails("soft"),
              HasSubstr("soft.npz: y: example 2: a one-hot label row must "
                        "hold one 1 and zeros; it holds 0.300000 at class 0"));
  EXPECT_THAT(fails("nan"), HasSubstr("nan.npz: y: example 1: label is NaN"));
}

TEST_F(ArraysDatasetTest, RefusesLabelsThatAreNotClassIndices) {
  ASSERT_TRUE(runPython(dir_.string(), R"PY(
x = np.zeros((5, 3, 2), np.float32)
for name, y in [('nan', [0, 1, 2, np.nan, 1]), ('negative', [0, -1, 2, 3, 1]),
                ('fraction', [0, 1, 2.5, 3, 1]), ('big', [0, 1, 2, 3, 7])]:
    np.savez(f'{d}/{name}.npz', x=x, y=np.array(y, np.float64))
np.savez(f'{d}/ints.npz', x=x, y=np.array([0, 1, 2, 3, 7], np.int64))
)PY"));
  auto fails = [&](const std::string &name, int32_t classes = 0) {
    ArraysOptions o = options();
    o.classes = classes;
    return openFails("arrays:" + path(name + ".npz"), o);
  };
  EXPECT_THAT(fails("nan"), HasSubstr("nan.npz: y: example 3: label is NaN"));
  EXPECT_THAT(fails("negative"),
              HasSubstr("negative.npz: y: example 1: label -1.000000 is not a "
                        "class index"));
  EXPECT_THAT(fails("fraction"),
              HasSubstr("fraction.npz: y: example 2: label 2.500000 is not a "
                        "class index"));
  EXPECT_THAT(fails("big", 5),
              HasSubstr("big.npz: y: example 4: label 7 is not below the "
                        "model's 5 classes"));
  EXPECT_THAT(fails("ints", 7),
              HasSubstr("ints.npz: y: example 4: label 7 is not below the "
                        "model's 7 classes"));
  // Without a class count the largest label sets it.
  auto ds = openMemory("arrays:" + path("ints.npz"), options());
  ASSERT_NE(ds, nullptr);
  EXPECT_EQ(ds->numClasses, 8);
}

TEST_F(ArraysDatasetTest, RefusesLabelsOfAnotherShape) {
  ASSERT_TRUE(runPython(dir_.string(), R"PY(
x = np.zeros((5, 3, 2))
np.savez(f'{d}/short.npz', x=x, y=np.arange(4))
np.save(f'{d}/x.npy', x)
np.save(f'{d}/y4.npy', np.arange(4))
np.savez(f'{d}/cube.npz', x=x, y=np.zeros((5, 2, 2)))
np.savez(f'{d}/scalar.npz', x=x, y=np.int64(3))
)PY"));
  EXPECT_THAT(openFails("arrays:" + path("short.npz"), options()),
              HasSubstr("short.npz: x holds 5 examples, y 4: every array "
                        "needs one row per example"));
  EXPECT_THAT(
      openFails("arrays:" + path("x.npy") + "," + path("y4.npy"), options()),
      HasSubstr("x.npy holds 5 examples, " + path("y4.npy") + " 4"));
  EXPECT_THAT(openFails("arrays:" + path("cube.npz"), options()),
              HasSubstr("cube.npz: y: shape (5, 2, 2); labels are (N,) or "
                        "(N, 1) class indices, or (N, C) one-hot rows"));
  EXPECT_THAT(openFails("arrays:" + path("scalar.npz"), options()),
              HasSubstr("scalar.npz: y: shape ()"));
}

/// A loss that compares predictions with targets (mean squared error, ...):
/// y becomes float targets as NumPy's float32 conversion makes them, (N,)
/// standing for (N, 1) as Keras expands it; a target that is not a finite
/// float32 is refused.
TEST_F(ArraysDatasetTest, TargetsAreNumpysFloat32AndFinite) {
  ASSERT_TRUE(runPython(dir_.string(), R"PY(
rng = np.random.default_rng(5)
x = np.zeros((6, 3, 2), np.float32)
y = rng.standard_normal(6) * 1e3
y[2] = 2.0 ** -140
np.savez(f'{d}/targets.npz', x=x, y=y)
y.astype('<f4').tofile(f'{d}/targets.f32')
for name, bad in [('nan', np.nan), ('inf', -np.inf), ('huge', 1e300)]:
    z = y.copy()
    z[4] = bad
    np.savez(f'{d}/{name}.npz', x=x, y=z)
)PY"));
  ArraysOptions o = options();
  o.targetShape = {1};
  auto ds = openMemory("arrays:" + path("targets.npz"), o);
  ASSERT_NE(ds, nullptr);
  EXPECT_TRUE(sameFloats(ds->targets, floats("targets.f32")));
  EXPECT_THAT(openFails("arrays:" + path("nan.npz"), o),
              HasSubstr("nan.npz: y: example 4: target is NaN"));
  EXPECT_THAT(openFails("arrays:" + path("inf.npz"), o),
              HasSubstr("inf.npz: y: example 4: target -inf is not finite "
                        "as float32"));
  EXPECT_THAT(openFails("arrays:" + path("huge.npz"), o),
              HasSubstr("huge.npz: y: example 4: target 1e+300 is not "
                        "finite as float32"));
}

//===-- the arrays a spec names -------------------------------------------===//

TEST_F(ArraysDatasetTest, RefusesXOfAnotherRowShape) {
  ASSERT_TRUE(runPython(dir_.string(), R"PY(
np.savez(f'{d}/wrong.npz', x=np.zeros((37, 2, 3), np.float32), y=np.zeros(37, np.int64))
np.savez(f'{d}/flat.npz', x=np.zeros((37, 6), np.uint8), y=np.zeros(37, np.int64))
np.savez(f'{d}/empty.npz', x=np.zeros((0, 3, 2)), y=np.zeros(0, np.int64))
)PY"));
  EXPECT_THAT(openFails("arrays:" + path("wrong.npz"), options()),
              HasSubstr("wrong.npz: x: shape (37, 2, 3) (float32); the "
                        "model's input 'pixels' takes (N, 3, 2)"));
  EXPECT_THAT(openFails("arrays:" + path("flat.npz"), options()),
              HasSubstr("flat.npz: x: shape (37, 6) (uint8); the model's "
                        "input 'pixels' takes (N, 3, 2)"));
  ArraysOptions vector = options();
  vector.shape = {5};
  EXPECT_THAT(openFails("arrays:" + path("flat.npz"), vector),
              HasSubstr("takes (N, 5)"));
  EXPECT_THAT(openFails("arrays:" + path("empty.npz"), options()),
              HasSubstr("empty.npz: x: holds no examples"));
}

TEST_F(ArraysDatasetTest, FindsXByNameOrByTheInputsName) {
  ASSERT_TRUE(runPython(dir_.string(), R"PY(
x = np.arange(5 * 6, dtype=np.float64).reshape(5, 3, 2) / 7
y = np.array([1, 0, 2, 2, 1])
np.savez(f'{d}/named.npz', pixels=x, y=y)
x.astype('<f4').tofile(f'{d}/x.f32')
)PY"));
  ArraysOptions other = options();
  other.inputName = "image";
  EXPECT_THAT(openFails("arrays:" + path("named.npz"), other),
              HasSubstr("named.npz: no array 'x' nor 'image' (the model's "
                        "input) among 'pixels', 'y'"));
  auto ds = openMemory("arrays:" + path("named.npz"), options());
  ASSERT_NE(ds, nullptr);
  EXPECT_EQ(ds->name, path("named.npz") + ": pixels");
  EXPECT_TRUE(sameFloats(ds->images, floats("x.f32")));
  EXPECT_EQ(ds->labels, (std::vector<int32_t>{1, 0, 2, 2, 1}));
}

TEST_F(ArraysDatasetTest, TheOneArrayBesidesXIsY) {
  ASSERT_TRUE(runPython(dir_.string(), R"PY(
x = np.zeros((4, 3, 2))
np.savez(f'{d}/one.npz', x=x, dense_3=np.array([3, 1, 0, 2]))
np.savez(f'{d}/weighted.npz', x=x, sample_weight=np.ones(4), out=np.array([2, 2, 0, 1]))
np.savez(f'{d}/two.npz', x=x, a=np.zeros(4), b=np.zeros(4))
np.savez(f'{d}/alone.npz', x=x)
)PY"));
  auto one = openMemory("arrays:" + path("one.npz"), options());
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->labels, (std::vector<int32_t>{3, 1, 0, 2}));
  // sample_weight is not the labels.
  auto weighted = openMemory("arrays:" + path("weighted.npz"), options());
  ASSERT_NE(weighted, nullptr);
  EXPECT_EQ(weighted->labels, (std::vector<int32_t>{2, 2, 0, 1}));
  EXPECT_THAT(openFails("arrays:" + path("two.npz"), options()),
              HasSubstr("two.npz: no array 'y' (the labels) among 'x', 'a', "
                        "'b': name the labels y"));
  EXPECT_THAT(openFails("arrays:" + path("alone.npz"), options()),
              HasSubstr("alone.npz: no array 'y' (the labels) among 'x'"));
  // Without labels needed, neither needs a y.
  ArraysOptions predict = options();
  predict.needsLabels = false;
  for (const char *name : {"two.npz", "alone.npz"}) {
    auto ds = openMemory("arrays:" + path(name), predict);
    ASSERT_NE(ds, nullptr) << name;
    EXPECT_EQ(ds->labels, std::vector<int32_t>(4, 0)) << name;
  }
}

TEST_F(ArraysDatasetTest, SingleNpyIsEnoughWithoutLabels) {
  ASSERT_TRUE(runPython(dir_.string(), R"PY(
x = np.linspace(-1, 1, 9 * 6).reshape(9, 3, 2)
np.save(f'{d}/x.npy', x)
x.astype('<f4').tofile(f'{d}/x.f32')
)PY"));
  std::string spec = "arrays:" + path("x.npy");
  EXPECT_THAT(openFails(spec, options()),
              HasSubstr("the labels are missing: arrays:X.npy,Y.npy"));
  ArraysOptions o = options();
  o.needsLabels = false;
  auto ds = openMemory(spec, o);
  ASSERT_NE(ds, nullptr);
  EXPECT_EQ(ds->name, path("x.npy"));
  EXPECT_EQ(ds->labels, std::vector<int32_t>(9, 0));
  EXPECT_EQ(ds->numClasses, 1);
  EXPECT_TRUE(sameFloats(ds->images, floats("x.f32")));
  o.inMemoryBytes = 0;
  std::optional<MappedExamples> mapped = openMapped(spec, o);
  ASSERT_TRUE(mapped);
  EXPECT_EQ(mapped->list->labels, std::vector<int32_t>(9, 0));
}

TEST_F(ArraysDatasetTest, RefusesMalformedSpecs) {
  EXPECT_TRUE(isArraysSpec("arrays:a.npz"));
  EXPECT_TRUE(isArraysSpec("csv:a.csv"));
  EXPECT_FALSE(isArraysSpec("images:dir"));
  EXPECT_FALSE(isArraysSpec("fashion_mnist"));
  EXPECT_THAT(openFails("arrays:", options()), HasSubstr("name the arrays"));
  EXPECT_THAT(openFails("arrays:a.npy,b.npy,c.npy", options()),
              HasSubstr("at most two files"));
  EXPECT_THAT(openFails("arrays:a.npy,", options()),
              HasSubstr("an empty file name"));
  EXPECT_THAT(openFails("csv:", options()), HasSubstr("name the file"));
}

//===-- csv ---------------------------------------------------------------===//

/// Four columns, the label second; NumPy's float32 of the features in file
/// order (all.f32) and of f2 then f0 (picked.f32).
const char *kCsvScript = R"PY(
rng = np.random.default_rng(8)
f = rng.standard_normal((11, 3)) * 10.0 ** rng.integers(-4, 4, (11, 3))
label = rng.integers(0, 3, 11)
a = np.column_stack([f[:, 0], label, f[:, 1], f[:, 2]])
np.savetxt(f'{d}/data.csv', a, delimiter=',', fmt='%.17g',
           header='f0,label,f1,f2', comments='')
t = np.loadtxt(f'{d}/data.csv', delimiter=',', skiprows=1)
t[:, [0, 2, 3]].astype('<f4').tofile(f'{d}/all.f32')
t[:, [3, 0]].astype('<f4').tofile(f'{d}/picked.f32')
t[:, 1].astype('<i4').tofile(f'{d}/label.i32')
)PY";

ArraysOptions csvOptions(int64_t features) {
  ArraysOptions o;
  o.inputName = "features";
  o.shape = ExampleShape{features};
  o.labelColumns = {"label"};
  return o;
}

TEST_F(ArraysDatasetTest, CsvLabelColumnAndTheRestInFileOrder) {
  ASSERT_TRUE(runPython(dir_.string(), kCsvScript));
  auto ds = openMemory("csv:" + path("data.csv"), csvOptions(3));
  ASSERT_NE(ds, nullptr);
  EXPECT_EQ(ds->name, path("data.csv"));
  EXPECT_EQ(ds->shape, ExampleShape{3});
  EXPECT_TRUE(sameFloats(ds->images, floats("all.f32")));
  EXPECT_EQ(ds->labels, ints("label.i32"));
  EXPECT_EQ(ds->numClasses,
            *std::max_element(ds->labels.begin(), ds->labels.end()) + 1);
}

TEST_F(ArraysDatasetTest, CsvFeatureColumnsPickAndOrder) {
  ASSERT_TRUE(runPython(dir_.string(), kCsvScript));
  ArraysOptions o = csvOptions(2);
  o.featureColumns = {"f2", "f0"};
  o.classes = 3;
  auto ds = openMemory("csv:" + path("data.csv"), o);
  ASSERT_NE(ds, nullptr);
  EXPECT_TRUE(sameFloats(ds->images, floats("picked.f32")));
  EXPECT_EQ(ds->labels, ints("label.i32"));
  EXPECT_EQ(ds->numClasses, 3);
}

TEST_F(ArraysDatasetTest, CsvRefusesColumnsThatDoNotFit) {
  ASSERT_TRUE(runPython(dir_.string(), kCsvScript));
  std::string file = path("data.csv");
  std::string spec = "csv:" + file;
  ArraysOptions o = csvOptions(3);
  o.labelColumns = {"class"};
  EXPECT_THAT(openFails(spec, o),
              HasSubstr(file + ": --label-columns 'class': no such column "
                               "(the columns: 'f0', 'label', 'f1', 'f2')"));
  o = csvOptions(2);
  o.featureColumns = {"f0", "f3"};
  EXPECT_THAT(openFails(spec, o),
              HasSubstr(file + ": --feature-columns 'f3': no such column"));
  o.featureColumns = {"f0", "label"};
  EXPECT_THAT(openFails(spec, o),
              HasSubstr(file + ": column 'label' is both a label and a "
                               "feature"));
  EXPECT_THAT(openFails(spec, csvOptions(4)),
              HasSubstr(file + ": 3 feature columns; the model's input "
                               "'features' takes (N, 4): name the features "
                               "with --feature-columns"));
  o = csvOptions(3);
  o.shape = {3, 1};
  EXPECT_THAT(openFails(spec, o),
              HasSubstr(file + ": 3 feature columns; the model's input "
                               "'features' takes (N, 3, 1): a CSV file feeds "
                               "a vector input"));
  o = csvOptions(3);
  o.labelColumns.clear();
  EXPECT_THAT(openFails(spec, o),
              HasSubstr(file + ": say which columns are the labels, "
                               "--label-columns"));
  // For --predict every column is a feature.
  o = csvOptions(4);
  o.labelColumns.clear();
  o.needsLabels = false;
  auto ds = openMemory(spec, o);
  ASSERT_NE(ds, nullptr);
  EXPECT_EQ(ds->labels, std::vector<int32_t>(11, 0));
}

TEST_F(ArraysDatasetTest, CsvLabelsAreCheckedAsClassIndices) {
  ASSERT_TRUE(runPython(dir_.string(), R"PY(
with open(f'{d}/bad.csv', 'w') as f:
    f.write('a,b,label\n1,2,0\n3,4,1\n5,6,1.5\n')
)PY"));
  EXPECT_THAT(openFails("csv:" + path("bad.csv"), csvOptions(2)),
              HasSubstr(path("bad.csv") + ": --label-columns: example 2: "
                                          "label 1.500000 is not a class "
                                          "index"));
}

} // namespace
} // namespace graph::runtime::data::test
