//===- NumpyArrayTest.cpp - .npy and .npz files against NumPy itself ------===//
//
// The oracle is NumPy, not our reader: each test has python3 with numpy
// write its fixtures (np.save, np.savez, np.savez_compressed) and the values
// it expects, converted by NumPy and written as raw little-endian float32 and
// float64 (`astype('<f4').tofile(...)`). Without python3 and numpy the tests
// fail: they are the reader's only independent check. Malformed files are
// built byte by byte here.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/NumpyArray.h"

#include "IdxFileWriter.h"
#include "PythonFixture.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

namespace graph::runtime::data::test {
namespace {

using ::testing::HasSubstr;

/// Equal bit for bit, except that any NaN equals any NaN.
template <typename T>
::testing::AssertionResult sameValues(const std::vector<T> &got,
                                      const std::vector<T> &want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure()
           << got.size() << " values, expected " << want.size();
  for (size_t i = 0; i < got.size(); ++i) {
    bool same = (std::isnan(got[i]) && std::isnan(want[i])) ||
                std::memcmp(&got[i], &want[i], sizeof(T)) == 0;
    if (!same)
      return ::testing::AssertionFailure()
             << "value " << i << " is " << got[i] << ", NumPy says " << want[i];
  }
  return ::testing::AssertionSuccess();
}

std::vector<float> allFloats(const NumpyArray &a) {
  int64_t rows = a.shape().empty() ? 1 : a.rows();
  std::vector<float> v(static_cast<size_t>(rows * a.rowElements()));
  a.rowsToFloat(0, rows, v.data());
  return v;
}

std::vector<double> allDoubles(const NumpyArray &a) {
  int64_t rows = a.shape().empty() ? 1 : a.rows();
  std::vector<double> v(static_cast<size_t>(rows * a.rowElements()));
  a.rowsToDouble(0, rows, v.data());
  return v;
}

/// A .npy file's bytes: the magic, version `major`.0, the header padded with
/// spaces and a '\n' to a multiple of 64 bytes, then `data`.
std::vector<uint8_t> npyBytes(const std::string &header,
                              const std::vector<uint8_t> &data, int major = 1) {
  size_t lengthBytes = major == 1 ? 2 : 4;
  std::string padded = header;
  while ((8 + lengthBytes + padded.size() + 1) % 64 != 0)
    padded += ' ';
  padded += '\n';
  std::vector<uint8_t> bytes = {
      0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  for (size_t i = 0; i < lengthBytes; ++i)
    bytes.push_back(static_cast<uint8_t>(padded.size() >> (8 * i)));
  bytes.insert(bytes.end(), padded.begin(), padded.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

class NumpyArrayTest : public TempDirTest {
protected:
  NumpyArray openOk(const std::string &name) {
    NumpyArray a;
    Status s = openNpy(path(name), a);
    EXPECT_TRUE(s) << s.message();
    return a;
  }
  Status openFails(const std::vector<uint8_t> &bytes) {
    writeRaw(path("bad.npy"), bytes);
    NumpyArray a;
    Status s = openNpy(path("bad.npy"), a);
    EXPECT_FALSE(s);
    return s;
  }
  /// Expects the .npz `file` in the test's folder to be refused as invalid
  /// input with a message that names it and goes on with `message`.
  void expectNpzRefused(const char *file, const std::string &message) {
    SCOPED_TRACE(file);
    std::vector<NumpyArray> arrays;
    Status s = openNpz(path(file), arrays);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.code(), StatusCode::invalidInput);
    EXPECT_THAT(s.message(), HasSubstr(path(file) + message));
  }
};

struct DtypeCase {
  const char *name;
  ElementType type;
};

const DtypeCase kDtypes[] = {
    {"float16", ElementType::f16}, {"float32", ElementType::f32},
    {"float64", ElementType::f64}, {"int8", ElementType::i8},
    {"int16", ElementType::i16},   {"int32", ElementType::i32},
    {"int64", ElementType::i64},   {"uint8", ElementType::u8},
    {"uint16", ElementType::u16},  {"uint32", ElementType::u32},
    {"uint64", ElementType::u64},  {"bool", ElementType::boolean},
};

/// Twelve values of every dtype, as a 3x4 array, little- and big-endian:
/// extremes, signed zeros, infinities, NaN, subnormals, and integers that
/// float32 must round.
const char *kDtypeScript = R"PY(
def values(name):
    if name.startswith('float'):
        info = np.finfo(name)
        return [0.0, -0.0, 1.5, -2.25, float(info.max), float(info.tiny),
                float(info.tiny) / 4, np.inf, -np.inf, np.nan, 0.1, 1.0 / 3]
    if name == 'bool':
        return [True, False, True, True, False, False, True, False, True,
                False, False, True]
    info = np.iinfo(name)
    return [info.min, info.max, 0, 1, info.max - 1, info.min + 1,
            info.max // 3, 100 % (info.max + 1), info.max // 2 + 1,
            (2**24 + 1) % (info.max + 1), (2**53 + 1) % (info.max + 1), 7]
for name in ['float16', 'float32', 'float64', 'int8', 'int16', 'int32',
             'int64', 'uint8', 'uint16', 'uint32', 'uint64', 'bool']:
    base = np.array(values(name), dtype=name).reshape(3, 4)
    for tag, order in [('le', '<'), ('be', '>')]:
        a = base.astype(np.dtype(name).newbyteorder(order))
        if a.dtype.itemsize > 1:
            assert a.dtype.str[0] == order, a.dtype.str
        np.save(f'{d}/{name}-{tag}.npy', a)
        a.astype('<f4').tofile(f'{d}/{name}-{tag}.f32')
        a.astype('<f8').tofile(f'{d}/{name}-{tag}.f64')
)PY";

TEST_F(NumpyArrayTest, EveryDtypeBothByteOrdersMatchesNumpy) {
  ASSERT_TRUE(runPython(dir_.string(), kDtypeScript));
  for (const DtypeCase &c : kDtypes) {
    for (const char *tag : {"le", "be"}) {
      std::string base = std::string(c.name) + "-" + tag;
      SCOPED_TRACE(base);
      NumpyArray a = openOk(base + ".npy");
      EXPECT_EQ(a.type(), c.type);
      EXPECT_STREQ(elementTypeName(a.type()), c.name);
      EXPECT_EQ(a.shape(), (std::vector<int64_t>{3, 4}));
      EXPECT_EQ(a.rows(), 3);
      EXPECT_EQ(a.rowElements(), 4);
      EXPECT_FALSE(a.fortranOrder());
      EXPECT_EQ(a.name(), path(base + ".npy"));
      EXPECT_EQ(a.source(), path(base + ".npy"));
      std::vector<float> wantF = readValues<float>(path(base + ".f32"));
      std::vector<double> wantD = readValues<double>(path(base + ".f64"));
      EXPECT_TRUE(sameValues(allFloats(a), wantF));
      EXPECT_TRUE(sameValues(allDoubles(a), wantD));
      // Rows 1 and 2 only.
      std::vector<float> rows(8);
      a.rowsToFloat(1, 2, rows.data());
      EXPECT_TRUE(
          sameValues(rows, std::vector<float>(wantF.begin() + 4, wantF.end())));
      std::vector<double> row(4);
      a.rowsToDouble(2, 1, row.data());
      EXPECT_TRUE(
          sameValues(row, std::vector<double>(wantD.begin() + 8, wantD.end())));
    }
  }
}

TEST_F(NumpyArrayTest, FortranOrderIsGatheredToRowMajor) {
  ASSERT_TRUE(runPython(dir_.string(), R"PY(
rng = np.random.default_rng(7)
arrays = {
    'f2d': rng.standard_normal((5, 7)).astype('<f4'),
    'f3d': (np.arange(24).reshape(2, 3, 4) * 3 - 7).astype('>i2'),
    'f4d': np.arange(2 * 3 * 4 * 5, dtype='<f8').reshape(2, 3, 4, 5) / 7,
    'f3d1': rng.integers(0, 255, (3, 1, 4)).astype('u1'),
}
for name, a in arrays.items():
    f = np.asfortranarray(a)
    assert f.flags.f_contiguous and not f.flags.c_contiguous
    assert f.dtype == a.dtype and f.dtype.str == a.dtype.str
    np.save(f'{d}/{name}.npy', f)
    # tofile writes C order, whatever the array's.
    a.astype('<f4').tofile(f'{d}/{name}.f32')
)PY"));
  struct Case {
    const char *name;
    std::vector<int64_t> shape;
  };
  for (const Case &c : {Case{"f2d", {5, 7}}, Case{"f3d", {2, 3, 4}},
                        Case{"f4d", {2, 3, 4, 5}}, Case{"f3d1", {3, 1, 4}}}) {
    SCOPED_TRACE(c.name);
    NumpyArray a = openOk(std::string(c.name) + ".npy");
    EXPECT_TRUE(a.fortranOrder());
    EXPECT_EQ(a.shape(), c.shape);
    std::vector<float> want =
        readValues<float>(path(std::string(c.name) + ".f32"));
    EXPECT_TRUE(sameValues(allFloats(a), want));
    // One row at a time, as a parallel map reads them.
    int64_t n = a.rowElements();
    for (int64_t r = 0; r < a.rows(); ++r) {
      std::vector<float> row(n);
      a.rowsToFloat(r, 1, row.data());
      EXPECT_TRUE(
          sameValues(row, std::vector<float>(want.begin() + r * n,
                                             want.begin() + (r + 1) * n)))
          << "row " << r;
    }
  }
}

TEST_F(NumpyArrayTest, ZeroOneAndThreeDimensionalArrays) {
  ASSERT_TRUE(runPython(dir_.string(), R"PY(
np.save(f'{d}/scalar.npy', np.float64(-3.25))
np.save(f'{d}/scalar-u2.npy', np.array(65535, dtype='>u2'))
np.save(f'{d}/vector.npy', np.arange(5, dtype='<i8') - 2)
c = np.arange(24, dtype='<f4').reshape(2, 3, 4) / 8
np.save(f'{d}/cube.npy', c)
c.astype('<f4').tofile(f'{d}/cube.f32')
np.save(f'{d}/no-rows.npy', np.zeros((0, 3), dtype='<f4'))
np.save(f'{d}/no-columns.npy', np.zeros((4, 0), dtype='<i4'))
)PY"));
  NumpyArray scalar = openOk("scalar.npy");
  EXPECT_TRUE(scalar.shape().empty());
  EXPECT_EQ(scalar.rows(), 0);
  EXPECT_EQ(scalar.rowElements(), 1);
  EXPECT_EQ(allDoubles(scalar), (std::vector<double>{-3.25}));
  EXPECT_EQ(allFloats(openOk("scalar-u2.npy")), (std::vector<float>{65535.0f}));

  NumpyArray vector = openOk("vector.npy");
  EXPECT_EQ(vector.shape(), (std::vector<int64_t>{5}));
  EXPECT_EQ(vector.rows(), 5);
  EXPECT_EQ(vector.rowElements(), 1);
  EXPECT_EQ(allFloats(vector), (std::vector<float>{-2, -1, 0, 1, 2}));
  std::vector<double> two(2);
  vector.rowsToDouble(3, 2, two.data());
  EXPECT_EQ(two, (std::vector<double>{1, 2}));

  NumpyArray cube = openOk("cube.npy");
  EXPECT_EQ(cube.shape(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(cube.rows(), 2);
  EXPECT_EQ(cube.rowElements(), 12);
  std::vector<float> want = readValues<float>(path("cube.f32"));
  EXPECT_TRUE(sameValues(allFloats(cube), want));
  std::vector<float> second(12);
  cube.rowsToFloat(1, 1, second.data());
  EXPECT_TRUE(
      sameValues(second, std::vector<float>(want.begin() + 12, want.end())));

  NumpyArray noRows = openOk("no-rows.npy");
  EXPECT_EQ(noRows.rows(), 0);
  EXPECT_EQ(noRows.rowElements(), 3);
  NumpyArray noColumns = openOk("no-columns.npy");
  EXPECT_EQ(noColumns.rows(), 4);
  EXPECT_EQ(noColumns.rowElements(), 0);
  noColumns.rowsToFloat(0, 4, nullptr); // nothing to write
}

TEST_F(NumpyArrayTest, SavezStoredAndCompressedMatchNumpy) {
  ASSERT_TRUE(runPython(dir_.string(), R"PY(
rng = np.random.default_rng(3)
plain = {'x': rng.standard_normal((10, 3)).astype('<f4'),
         'labels': np.arange(10, dtype='<i8') % 4,
         'scale': np.array(2.5)}
packed = {'images': rng.random((50, 4, 4)).astype('>f8'),
          'labels': (np.arange(50) % 3).astype('u1'),
          'mask': np.asfortranarray(rng.random((6, 5)) > 0.5),
          'half': rng.standard_normal((7, 2)).astype('<f2')}
np.savez(f'{d}/plain.npz', **plain)
np.savez_compressed(f'{d}/packed.npz', **packed)
np.savez(f'{d}/positional.npz', plain['x'], plain['labels'])
for archive, arrays in [('plain', plain), ('packed', packed)]:
    for name, a in arrays.items():
        a.astype('<f4').tofile(f'{d}/{archive}-{name}.f32')
        a.astype('<f8').tofile(f'{d}/{archive}-{name}.f64')
kinds = {i.compress_type for i in zipfile.ZipFile(f'{d}/plain.npz').infolist()}
assert kinds == {zipfile.ZIP_STORED}, kinds
kinds = {i.compress_type for i in zipfile.ZipFile(f'{d}/packed.npz').infolist()}
assert kinds == {zipfile.ZIP_DEFLATED}, kinds
)PY"));
  struct Expect {
    const char *name;
    ElementType type;
    std::vector<int64_t> shape;
  };
  auto check = [&](const std::string &archive,
                   const std::vector<Expect> &expected) {
    SCOPED_TRACE(archive);
    std::vector<NumpyArray> arrays;
    Status s = openNpz(path(archive + ".npz"), arrays);
    ASSERT_TRUE(s) << s.message();
    ASSERT_EQ(arrays.size(), expected.size());
    for (size_t i = 0; i < arrays.size(); ++i) {
      const Expect &e = expected[i];
      SCOPED_TRACE(e.name);
      EXPECT_EQ(arrays[i].name(), e.name); // in the archive's order
      EXPECT_EQ(arrays[i].source(), path(archive + ".npz") + ": " + e.name);
      EXPECT_EQ(arrays[i].type(), e.type);
      EXPECT_EQ(arrays[i].shape(), e.shape);
      std::string base = path(archive + "-" + e.name);
      EXPECT_TRUE(
          sameValues(allFloats(arrays[i]), readValues<float>(base + ".f32")));
      EXPECT_TRUE(
          sameValues(allDoubles(arrays[i]), readValues<double>(base + ".f64")));
    }
  };
  check("plain", {{"x", ElementType::f32, {10, 3}},
                  {"labels", ElementType::i64, {10}},
                  {"scale", ElementType::f64, {}}});
  check("packed", {{"images", ElementType::f64, {50, 4, 4}},
                   {"labels", ElementType::u8, {50}},
                   {"mask", ElementType::boolean, {6, 5}},
                   {"half", ElementType::f16, {7, 2}}});

  std::vector<NumpyArray> positional;
  Status s = openNpz(path("positional.npz"), positional);
  ASSERT_TRUE(s) << s.message();
  ASSERT_EQ(positional.size(), 2u);
  EXPECT_EQ(positional[0].name(), "arr_0");
  EXPECT_EQ(positional[1].name(), "arr_1");
  EXPECT_TRUE(sameValues(allFloats(positional[0]),
                         readValues<float>(path("plain-x.f32"))));
}

TEST_F(NumpyArrayTest, PickledObjectArraysAreNeverUnpickled) {
  ASSERT_TRUE(runPython(dir_.string(), R"PY(
class Trap:
    # Unpickling this creates the file 'unpickled': the reader must not.
    def __reduce__(self):
        return (open, (os.path.join(d, 'unpickled'), 'w'))
np.save(f'{d}/objects.npy', np.array([Trap(), None], dtype=object),
        allow_pickle=True)
np.savez(f'{d}/objects.npz', good=np.arange(3),
         bad=np.array([Trap(), 1], dtype=object))
assert not os.path.exists(os.path.join(d, 'unpickled'))
)PY"));
  const std::string refusal =
      "holds a pickled object array (dtype object), which graphrun never "
      "unpickles: save a numeric array";
  NumpyArray a;
  Status s = openNpy(path("objects.npy"), a);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.code(), StatusCode::invalidInput);
  EXPECT_THAT(s.message(), HasSubstr(path("objects.npy") + ": " + refusal));

  std::vector<NumpyArray> arrays;
  s = openNpz(path("objects.npz"), arrays);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(),
              HasSubstr(path("objects.npz") + ": bad: " + refusal));
  EXPECT_TRUE(arrays.empty());
  EXPECT_FALSE(std::filesystem::exists(path("unpickled")));
}

TEST_F(NumpyArrayTest, NonNumericDtypesAreRefusedByName) {
  ASSERT_TRUE(runPython(dir_.string(), R"PY(
np.save(f'{d}/complex64.npy', np.zeros(3, dtype='<c8'))
np.save(f'{d}/complex128.npy', np.zeros(3, dtype='>c16'))
np.save(f'{d}/structured.npy', np.zeros(3, dtype=[('a', '<f4'), ('b', '<i4')]))
np.save(f'{d}/unicode.npy', np.array(['ab', 'c']))
np.save(f'{d}/bytes.npy', np.array([b'ab', b'c']))
np.save(f'{d}/datetime.npy', np.array(['2020-01-01'], dtype='datetime64[D]'))
np.save(f'{d}/timedelta.npy', np.array([5], dtype='timedelta64[s]'))
np.save(f'{d}/void.npy', np.zeros(2, dtype='V4'))
np.save(f'{d}/longdouble.npy', np.zeros(2, dtype=np.longdouble))
)PY"));
  struct Case {
    const char *file;
    const char *message;
  };
  for (const Case &c : {
           Case{"complex64.npy",
                "holds complex numbers (dtype complex64, descr '<c8')"},
           Case{"complex128.npy",
                "holds complex numbers (dtype complex128, descr '>c16')"},
           Case{"structured.npy", "holds a structured array"},
           Case{"unicode.npy", "holds unicode strings (dtype str, descr "},
           Case{"bytes.npy", "holds byte strings (dtype bytes, descr '|S2')"},
           Case{"datetime.npy",
                "holds dates (dtype datetime64, descr '<M8[D]')"},
           Case{"timedelta.npy",
                "holds time spans (dtype timedelta64, descr '<m8[s]')"},
           Case{"void.npy", "holds raw bytes (dtype void, descr '|V4')"},
           Case{"longdouble.npy", "holds extended-precision floats (dtype "
                                  "longdouble, descr '<f16')"},
       }) {
    SCOPED_TRACE(c.file);
    NumpyArray a;
    Status s = openNpy(path(c.file), a);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.code(), StatusCode::invalidInput);
    EXPECT_THAT(s.message(), HasSubstr(path(c.file) + ": " + c.message));
    EXPECT_THAT(s.message(), HasSubstr("which graphrun does not read"));
  }
}

TEST_F(NumpyArrayTest, HeaderParsingIsRobust) {
  // int16 1..6 little-endian, as a 2x3 array.
  std::vector<uint8_t> data = {1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0};
  const std::vector<float> want = {1, 2, 3, 4, 5, 6};
  struct Case {
    std::string header;
    int major;
  };
  for (const Case &c : {
           Case{"{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3), }",
                1},
           Case{"{'shape': (2, 3), 'fortran_order': False, 'descr': '<i2'}", 1},
           Case{"{\"descr\": \"<i2\", \"fortran_order\": False, \"shape\": "
                "(2,3)}",
                1},
           Case{"{ 'descr' : '<i2' ,\t'fortran_order' : False , 'shape' : "
                "( 2 , 3 , ) , }",
                1},
           Case{"{'descr': '<i2', 'fortran_order': False, 'shape': (2L, 3L), "
                "}",
                1},
           Case{"{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3), }",
                2},
           Case{"{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3), }",
                3},
       }) {
    SCOPED_TRACE(c.header + " version " + std::to_string(c.major));
    writeRaw(path("ok.npy"), npyBytes(c.header, data, c.major));
    NumpyArray a = openOk("ok.npy");
    EXPECT_EQ(a.type(), ElementType::i16);
    EXPECT_EQ(a.shape(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(allFloats(a), want);
  }
  // Shapes "()" and "(5,)"; True for Fortran order.
  writeRaw(
      path("scalar.npy"),
      npyBytes("{'descr': '|u1', 'fortran_order': False, 'shape': ()}", {42}));
  NumpyArray scalar = openOk("scalar.npy");
  EXPECT_TRUE(scalar.shape().empty());
  EXPECT_EQ(allFloats(scalar), (std::vector<float>{42}));
  writeRaw(path("vector.npy"),
           npyBytes("{'descr': '|b1', 'fortran_order': True, 'shape': (5,)}",
                    {1, 0, 1, 1, 0}));
  NumpyArray vector = openOk("vector.npy");
  EXPECT_TRUE(vector.fortranOrder());
  EXPECT_EQ(allFloats(vector), (std::vector<float>{1, 0, 1, 1, 0}));
}

TEST_F(NumpyArrayTest, TruncatedData) {
  Status s = openFails(
      npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }",
               std::vector<uint8_t>(40)));
  EXPECT_EQ(s.code(), StatusCode::invalidInput);
  EXPECT_THAT(s.message(),
              HasSubstr(path("bad.npy") + ": holds 40 bytes of data, its "
                                          "header declares 48 (shape (3, 4) "
                                          "of float32); the file is "
                                          "truncated"));
}

TEST_F(NumpyArrayTest, TrailingData) {
  Status s = openFails(
      npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }",
               std::vector<uint8_t>(52)));
  EXPECT_THAT(s.message(),
              HasSubstr(path("bad.npy") + ": holds 52 bytes of data, its "
                                          "header declares 48"));
  EXPECT_THAT(s.message(), HasSubstr("trailing bytes"));
}

TEST_F(NumpyArrayTest, BadMagic) {
  std::string text = "x,y\n1,2\nthis is a CSV file, not an array\n";
  Status s = openFails(std::vector<uint8_t>(text.begin(), text.end()));
  EXPECT_EQ(s.code(), StatusCode::invalidInput);
  EXPECT_THAT(s.message(),
              HasSubstr(path("bad.npy") + ": not a .npy file: it does not "
                                          "begin with NumPy's magic string"));
  // An .npz under the wrong name says so.
  s = openFails({'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0, 0});
  EXPECT_THAT(s.message(), HasSubstr("perhaps an .npz"));
  // A file that ends inside the magic.
  s = openFails({0x93, 'N', 'U'});
  EXPECT_THAT(s.message(), HasSubstr(": not a .npy file"));
}

TEST_F(NumpyArrayTest, UnknownVersion) {
  std::vector<uint8_t> bytes =
      npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
               {0, 0, 0, 0});
  bytes[6] = 4;
  Status s = openFails(bytes);
  EXPECT_THAT(s.message(), HasSubstr(path("bad.npy") + ": NumPy format version "
                                                       "4.0 is unknown"));
  bytes[6] = 1;
  bytes[7] = 1;
  s = openFails(bytes);
  EXPECT_THAT(s.message(), HasSubstr("NumPy format version 1.1 is unknown"));
}

TEST_F(NumpyArrayTest, MalformedHeaders) {
  const std::string tail = ", 'fortran_order': False, 'shape': (3,)}";
  struct Case {
    std::string header;
    std::string message;
  };
  for (const Case &c : {
           Case{"'descr': '<f4'", "malformed header: expected '{'"},
           Case{"{'descr': '<f4', 'fortran_order': False}",
                "malformed header: the key 'shape' is missing"},
           Case{"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), "
                "'extra': 1}",
                "malformed header: unknown key 'extra'"},
           Case{"{'descr': '<f4', 'descr': '<f4'" + tail,
                "malformed header: the key 'descr' appears twice"},
           Case{"{'descr': '<f4', 'fortran_order': 0, 'shape': (3,)}",
                "'fortran_order' is 0, not True or False"},
           Case{"{'descr': '<f4', 'fortran_order': False, 'shape': [3]}",
                "'shape' is [3], not a tuple"},
           Case{"{'descr': '<f4', 'fortran_order': False, 'shape': (3)}",
                "'shape' is 3, not a tuple"},
           Case{"{'descr': '<f4', 'fortran_order': False, 'shape': (3.5,)}",
                "expected an integer"},
           Case{"{'descr': '<f4', 'fortran_order': False, 'shape': (3,)",
                "expected ',' or '}'"},
           Case{"{'descr': '<f4", "closing quote"},
           Case{"{'descr': '<f4'" + tail + " junk",
                "expected only padding after the dict's '}'"},
           Case{"{'descr': __import__('os')" + tail,
                "'__import__' at character 10 is not a literal"},
           Case{"{'descr': " + std::string(100, '(') + "1" + tail,
                "nested more than 32 deep"},
           Case{"{'descr': 3" + tail, "'descr' is 3, not a dtype string"},
           Case{"{'descr': '<q9'" + tail, "descr '<q9' is not a dtype"},
           Case{"{'descr': '<'" + tail, "'descr' is '<', not a dtype string"},
           Case{"{3: '<f4'" + tail, "expected a quoted key"},
       }) {
    SCOPED_TRACE(c.header);
    Status s = openFails(npyBytes(c.header, std::vector<uint8_t>(12)));
    EXPECT_EQ(s.code(), StatusCode::invalidInput);
    EXPECT_THAT(s.message(), HasSubstr(path("bad.npy") + ": "));
    EXPECT_THAT(s.message(), HasSubstr(c.message));
  }
}

TEST_F(NumpyArrayTest, OversizedOrCutHeader) {
  // Version 2.0 declares a 2 MiB header: refused before it is read.
  std::vector<uint8_t> bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0};
  uint32_t length = (2u << 20) + 1;
  for (int i = 0; i < 4; ++i)
    bytes.push_back(static_cast<uint8_t>(length >> (8 * i)));
  bytes.resize(bytes.size() + 100, ' ');
  Status s = openFails(bytes);
  EXPECT_THAT(s.message(),
              HasSubstr(path("bad.npy") + ": declares a header of 2097153 "
                                          "bytes, more than graphrun's limit "
                                          "of 1 MiB"));
  // A header longer than the file.
  bytes =
      npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", {});
  bytes.resize(40);
  s = openFails(bytes);
  EXPECT_THAT(s.message(),
              HasSubstr(path("bad.npy") + ": truncated: the header declares "
                                          "118 bytes but the file holds 30"));
  // A file that ends inside the header's length.
  s = openFails({0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0x76});
  EXPECT_THAT(s.message(), HasSubstr("truncated: the file ends inside the "
                                     "header's length"));
}

TEST_F(NumpyArrayTest, OverflowingOrNegativeShape) {
  struct Case {
    std::string shape;
    std::string message;
  };
  for (const Case &c : {
           Case{"(4611686018427387904, 4)",
                "the shape (4611686018427387904, 4) of float32 overflows"},
           Case{"(3037000500, 3037000500)", "overflows"},
           // Empty, yet its rows' size overflows (found by the fuzzer:
           // rowElements() overflowed; NumPy: "array is too big").
           Case{"(0, 4611686018427387904, 4)",
                "the shape (0, 4611686018427387904, 4) of float32 overflows"},
           Case{"(99999999999999999999999,)",
                "has a dimension, 99999999999999999999999, that overflows a "
                "64-bit integer"},
           Case{"(-1, 3)", "the shape (-1, 3) has a negative dimension, -1"},
       }) {
    SCOPED_TRACE(c.shape);
    Status s = openFails(npyBytes(
        "{'descr': '<f4', 'fortran_order': False, 'shape': " + c.shape + "}",
        std::vector<uint8_t>(16)));
    EXPECT_EQ(s.code(), StatusCode::invalidInput);
    EXPECT_THAT(s.message(), HasSubstr(path("bad.npy") + ": "));
    EXPECT_THAT(s.message(), HasSubstr(c.message));
  }
}

TEST_F(NumpyArrayTest, EmptyMissingAndDirectory) {
  Status s = openFails({});
  EXPECT_EQ(s.code(), StatusCode::invalidInput);
  EXPECT_THAT(s.message(), HasSubstr(path("bad.npy") + ": is empty (0 bytes)"));

  NumpyArray a;
  s = openNpy(path("missing.npy"), a);
  EXPECT_EQ(s.code(), StatusCode::notFound);
  EXPECT_THAT(s.message(), HasSubstr(path("missing.npy") + ": no such file"));
  s = openNpy(dir_.string(), a);
  EXPECT_THAT(s.message(), HasSubstr(dir_.string() + ": is a directory"));

  std::vector<NumpyArray> arrays;
  writeRaw(path("empty.npz"), {});
  s = openNpz(path("empty.npz"), arrays);
  EXPECT_EQ(s.code(), StatusCode::invalidInput);
  EXPECT_THAT(s.message(), HasSubstr(path("empty.npz") + ": is empty (0 "
                                                         "bytes), not an .npz "
                                                         "archive"));
  s = openNpz(path("missing.npz"), arrays);
  EXPECT_EQ(s.code(), StatusCode::notFound);
  EXPECT_THAT(s.message(), HasSubstr(path("missing.npz") + ": no such file"));
}

TEST_F(NumpyArrayTest, NpzThatIsNotAZip) {
  std::string text = "not a zip archive at all, just some text\n";
  writeRaw(path("text.npz"), std::vector<uint8_t>(text.begin(), text.end()));
  std::vector<NumpyArray> arrays;
  Status s = openNpz(path("text.npz"), arrays);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.code(), StatusCode::invalidInput);
  EXPECT_THAT(s.message(), HasSubstr(path("text.npz") + ": not an .npz "
                                                        "archive (not a zip "
                                                        "archive"));
  // A .npy file named as an .npz.
  writeRaw(
      path("array.npz"),
      npyBytes("{'descr': '|u1', 'fortran_order': False, 'shape': ()}", {1}));
  s = openNpz(path("array.npz"), arrays);
  EXPECT_THAT(s.message(), HasSubstr(path("array.npz") + ": not an .npz"));
}

TEST_F(NumpyArrayTest, NpzWithNoArrays) {
  // The end-of-central-directory record alone: a zip with no members.
  std::vector<uint8_t> bytes = {'P', 'K', 5, 6};
  bytes.resize(22, 0);
  writeRaw(path("none.npz"), bytes);
  std::vector<NumpyArray> arrays;
  Status s = openNpz(path("none.npz"), arrays);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr(path("none.npz") + ": holds no arrays"));
}

TEST_F(NumpyArrayTest, NpzMembersThatAreNotArrays) {
  ASSERT_TRUE(runPython(dir_.string(), R"PY(
import io
def npy(a):
    b = io.BytesIO(); np.save(b, a); return b.getvalue()
with zipfile.ZipFile(f'{d}/readme.npz', 'w') as z:
    z.writestr('x.npy', npy(np.arange(3)))
    z.writestr('README.txt', 'hello')
with zipfile.ZipFile(f'{d}/garbage.npz', 'w', zipfile.ZIP_DEFLATED) as z:
    z.writestr('x.npy', 'this is not an array')
with zipfile.ZipFile(f'{d}/cut.npz', 'w') as z:
    z.writestr('x.npy', npy(np.arange(12, dtype='<f4'))[:-8])
with zipfile.ZipFile(f'{d}/hollow.npz', 'w') as z:
    z.writestr('x.npy', b'')
)PY"));
  expectNpzRefused("readme.npz", ": member 'README.txt' is not a .npy file");
  expectNpzRefused("garbage.npz", ": x: not a .npy file");
  expectNpzRefused("cut.npz",
                   ": x: holds 40 bytes of data, its header declares 48");
  expectNpzRefused("hollow.npz", ": x: is empty (0 bytes)");
}

// Sizes in the central directory that no real archive has are refused as
// corrupt before anything is reserved for them (the reader used to reserve
// the declared size, up to the memory available, and find the lie after).
TEST_F(NumpyArrayTest, NpzSizesNoArchiveCanHoldAreCorrupt) {
  ASSERT_TRUE(runPython(dir_.string(), R"PY(
import io, struct
def npy(a):
    b = io.BytesIO(); np.save(b, a); return b.getvalue()
def patched(name, comp_size, size):
    with zipfile.ZipFile(f'{d}/{name}', 'w', zipfile.ZIP_DEFLATED) as z:
        z.writestr('x.npy', npy(np.arange(3)))
    raw = bytearray(open(f'{d}/{name}', 'rb').read())
    cd = raw.index(b'PK\x01\x02')
    raw[cd + 20:cd + 28] = struct.pack('<II', comp_size, size)
    open(f'{d}/{name}', 'wb').write(bytes(raw))
patched('outsized.npz', 0xFFFFFF00, 0xFFFFFFF0)
patched('inflated.npz', 100, 200000)
)PY"));
  const auto archive = std::filesystem::file_size(path("outsized.npz"));
  expectNpzRefused("outsized.npz", ": x.npy: declares 4294967040 compressed "
                                   "bytes in an archive of " +
                                       std::to_string(archive) +
                                       " (archive corrupt)");
  expectNpzRefused("inflated.npz", ": x.npy: declares 200000 bytes from 100 "
                                   "deflated, more than deflate expands "
                                   "(1032x; archive corrupt)");
}

/// True if this process maps `file`.
bool mapped(const std::string &file) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.size() >= file.size() &&
        line.compare(line.size() - file.size(), file.size(), file) == 0)
      return true;
  return false;
}

TEST_F(NumpyArrayTest, NpyIsMappedAndCopiesShareTheMapping) {
  std::vector<uint8_t> data(4 * 6);
  for (int i = 0; i < 6; ++i) {
    float f = static_cast<float>(i) * 0.5f;
    std::memcpy(&data[4 * i], &f, 4);
  }
  writeRaw(path("mapped.npy"),
           npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3, "
                    "2), }",
                    data));
  std::string file = std::filesystem::canonical(path("mapped.npy")).string();
  NumpyArray copy;
  {
    NumpyArray a = openOk("mapped.npy");
    EXPECT_TRUE(mapped(file));
    copy = a;
  }
  EXPECT_TRUE(mapped(file)); // the copy keeps it
  EXPECT_EQ(allFloats(copy), (std::vector<float>{0, 0.5, 1, 1.5, 2, 2.5}));
  copy = NumpyArray();
  EXPECT_FALSE(mapped(file));
}

TEST_F(NumpyArrayTest, RowsConvertInParallel) {
  ASSERT_TRUE(runPython(dir_.string(), R"PY(
rng = np.random.default_rng(11)
a = rng.integers(-1000, 1000, (512, 3, 5)).astype('>i4')
np.save(f'{d}/c.npy', a)
np.save(f'{d}/f.npy', np.asfortranarray(a))
a.astype('<f4').tofile(f'{d}/want.f32')
)PY"));
  std::vector<float> want = readValues<float>(path("want.f32"));
  for (const char *name : {"c.npy", "f.npy"}) {
    SCOPED_TRACE(name);
    NumpyArray a = openOk(name);
    const int64_t n = a.rowElements();
    std::vector<float> got(want.size(), -1.0f);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        for (int64_t r = t; r < a.rows(); r += 4)
          a.rowsToFloat(r, 1, got.data() + r * n);
      });
    for (std::thread &t : threads)
      t.join();
    EXPECT_TRUE(sameValues(got, want));
  }
}

} // namespace
} // namespace graph::runtime::data::test
