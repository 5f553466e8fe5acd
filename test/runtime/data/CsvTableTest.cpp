//===- CsvTableTest.cpp - CSV files of numbers, each rule and NumPy -------===//
//
// One test per rule of the reader, on files written here, and one against
// NumPy: np.loadtxt(..., delimiter=',', skiprows=1) of a file np.savetxt
// wrote must be what readCsv reads, bit for bit. Without python3 and numpy
// that test fails rather than skips.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/CsvTable.h"

#include "IdxFileWriter.h"
#include "PythonFixture.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

namespace graph::runtime::data::test {
namespace {

using ::testing::HasSubstr;

class CsvTableTest : public TempDirTest {
protected:
  void write(const std::string &name, const std::string &text) {
    writeRaw(path(name), std::vector<uint8_t>(text.begin(), text.end()));
  }
  CsvTable readOk(const std::string &text) {
    write("data.csv", text);
    CsvTable t;
    Status s = readCsv(path("data.csv"), t);
    EXPECT_TRUE(s) << s.message();
    return t;
  }
  /// The message of reading `text`, which must fail as invalid input; it
  /// must begin with the file's path.
  std::string readFails(const std::string &text) {
    write("data.csv", text);
    CsvTable t;
    Status s = readCsv(path("data.csv"), t);
    EXPECT_FALSE(s);
    EXPECT_EQ(s.code(), StatusCode::invalidInput);
    EXPECT_THAT(s.message(), ::testing::StartsWith(path("data.csv") + ": "));
    return s.message().substr(
        std::min(s.message().size(), path("data.csv").size() + 2));
  }
};

TEST_F(CsvTableTest, ReadsNumbersUnderHeader) {
  CsvTable t = readOk("age,height,score\n31,1.80,-2.5\n47,1.62,1e3\n"
                      "5,0.95,.25\n");
  EXPECT_EQ(t.path, path("data.csv"));
  EXPECT_EQ(t.columns, (std::vector<std::string>{"age", "height", "score"}));
  EXPECT_EQ(t.rows, 3);
  EXPECT_EQ(t.values, (std::vector<double>{31, 1.80, -2.5, 47, 1.62, 1000, 5,
                                           0.95, 0.25}));
  EXPECT_EQ(t.column("height"), 1);
  EXPECT_EQ(t.column("score"), 2);
  EXPECT_EQ(t.column("weight"), -1);
}

TEST_F(CsvTableTest, MatchesNumpyLoadtxt) {
  ASSERT_TRUE(runPython(dir_.string(), R"PY(
rng = np.random.default_rng(5)
a = np.concatenate([rng.standard_normal((40, 3)) * 10.0 ** rng.integers(-8, 8, (40, 3)),
                    rng.integers(-10**6, 10**6, (40, 1)),
                    np.full((40, 1), 5e-324), np.full((40, 1), -0.0)], axis=1)
np.savetxt(f'{d}/table.csv', a, delimiter=',', fmt='%.17g',
           header='x,y,z,count,tiny,zero', comments='')
# The rounding to shortest also: a second file with repr's digits.
with open(f'{d}/short.csv', 'w') as f:
    f.write('p,q\r\n')
    for row in rng.random((25, 2)):
        f.write(' %r , %r \r\n' % (float(row[0]), float(row[1])))
for name in ['table', 'short']:
    np.loadtxt(f'{d}/{name}.csv', delimiter=',', skiprows=1).astype('<f8').tofile(f'{d}/{name}.f64')
)PY"));
  for (const char *name : {"table", "short"}) {
    SCOPED_TRACE(name);
    CsvTable t;
    Status s = readCsv(path(std::string(name) + ".csv"), t);
    ASSERT_TRUE(s) << s.message();
    std::ifstream f(path(std::string(name) + ".f64"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(f)),
                      std::istreambuf_iterator<char>());
    std::vector<double> want(bytes.size() / sizeof(double));
    std::memcpy(want.data(), bytes.data(), bytes.size());
    ASSERT_EQ(t.values.size(), want.size());
    EXPECT_EQ(t.rows * static_cast<int64_t>(t.columns.size()),
              static_cast<int64_t>(want.size()));
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_EQ(std::memcmp(&t.values[i], &want[i], sizeof(double)), 0)
          << "value " << i << ": " << t.values[i] << ", NumPy says " << want[i];
  }
}

TEST_F(CsvTableTest, TrimsWhitespaceAndReadsQuotedFields) {
  CsvTable t = readOk("  id , \"size, in mm\" ,\"the \"\"best\"\" one\"\t\n"
                      " 1 , \"2.5\" , -3 \n");
  EXPECT_EQ(t.columns, (std::vector<std::string>{"id", "size, in mm",
                                                 "the \"best\" one"}));
  EXPECT_EQ(t.values, (std::vector<double>{1, 2.5, -3}));
  EXPECT_EQ(t.column("size, in mm"), 1);
}

TEST_F(CsvTableTest, QuotedFieldMaySpanLines) {
  // The line numbers that follow count the physical lines.
  CsvTable t = readOk("a,\"b\nc\"\n1,2\n");
  EXPECT_EQ(t.columns, (std::vector<std::string>{"a", "b\nc"}));
  EXPECT_THAT(readFails("a,\"b\nc\"\n1,2\n3\n"), HasSubstr("line 4: 1 field"));
}

TEST_F(CsvTableTest, CrlfAndMissingFinalNewline) {
  CsvTable t = readOk("a,b\r\n1,2\r\n3,4");
  EXPECT_EQ(t.columns, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(t.rows, 2);
  EXPECT_EQ(t.values, (std::vector<double>{1, 2, 3, 4}));
}

TEST_F(CsvTableTest, LoneCarriageReturnEndsARecord) {
  // Classic Mac OS's line ends, which Python's csv module reads as lines
  // (csv.reader(open(f, newline=""))); a quoted field keeps its own.
  CsvTable t = readOk("a,b\r1,2\r3,4\r");
  EXPECT_EQ(t.columns, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(t.rows, 2);
  EXPECT_EQ(t.values, (std::vector<double>{1, 2, 3, 4}));
  t = readOk("a,\"b\rc\"\r\n1,2\r\r3,4");
  EXPECT_EQ(t.columns, (std::vector<std::string>{"a", "b\rc"}));
  EXPECT_EQ(t.values, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_THAT(readFails("a,b\r1,2\r3\r"), HasSubstr("line 3: 1 field"));
}

TEST_F(CsvTableTest, BlankLinesAreIgnored) {
  CsvTable t = readOk("a,b\n1,2\n\n3,4\n\n  \r\n\n");
  EXPECT_EQ(t.rows, 2);
  EXPECT_EQ(t.values, (std::vector<double>{1, 2, 3, 4}));
}

TEST_F(CsvTableTest, ByteOrderMarkIsDropped) {
  CsvTable t = readOk("\xEF\xBB\xBFx,y\n1,2\n");
  EXPECT_EQ(t.columns, (std::vector<std::string>{"x", "y"}));
}

TEST_F(CsvTableTest, SignsAndExponents) {
  CsvTable t = readOk("v\n+1.5\n-0\n1E-3\n-2.5e+2\n7.\n");
  EXPECT_EQ(t.values, (std::vector<double>{1.5, -0.0, 1e-3, -250, 7}));
  EXPECT_TRUE(std::signbit(t.values[1]));
}

TEST_F(CsvTableTest, FieldCountDiffersFromHeader) {
  EXPECT_EQ(readFails("a,b,c,d\n1,2,3,4\n1,2,3\n"),
            "line 3: 3 fields, the header has 4; every row needs one field "
            "per column");
  EXPECT_THAT(readFails("a,b\n1,2,3\n"),
              HasSubstr("line 2: 3 fields, the header has 2"));
  EXPECT_THAT(readFails("a,b\n1,2,\n"),
              HasSubstr("line 2: 3 fields, the header has 2"));
}

TEST_F(CsvTableTest, NonNumericCell) {
  EXPECT_EQ(readFails("name,age\n1,2\n3,4\n5,6\n7,abc\n"),
            "line 5, column 'age': 'abc' is not a number");
  EXPECT_THAT(readFails("x\n12abc\n"),
              HasSubstr("line 2, column 'x': '12abc' is not a number"));
  EXPECT_THAT(readFails("x\n0x1A\n"), HasSubstr("'0x1A' is not a number"));
  EXPECT_THAT(readFails("x\n1,5\n"), HasSubstr("2 fields"));
  EXPECT_THAT(readFails("x\n--1\n"), HasSubstr("'--1' is not a number"));
  EXPECT_THAT(readFails("x\n+-1\n"), HasSubstr("'+-1' is not a number"));
}

TEST_F(CsvTableTest, EmptyCell) {
  EXPECT_EQ(readFails("a,b\n1,2\n3,\n"),
            "line 3, column 'b': the cell is empty; every cell must hold a "
            "number");
  EXPECT_THAT(readFails("a,b\n , 2\n"),
              HasSubstr("line 2, column 'a': the cell is empty"));
  EXPECT_THAT(readFails("a,b\n\"\",2\n"),
              HasSubstr("line 2, column 'a': the cell is empty"));
}

TEST_F(CsvTableTest, NanAndInfinityAreRefused) {
  for (const char *cell : {"nan", "NaN", "inf", "-inf", "Infinity"}) {
    SCOPED_TRACE(cell);
    EXPECT_THAT(readFails(std::string("a,b\n1,") + cell + "\n"),
                HasSubstr(std::string("line 2, column 'b': '") + cell +
                          "' is not a finite number"));
  }
  EXPECT_THAT(readFails("a\n1e999\n"),
              HasSubstr("'1e999' is out of the range of a double"));
  // A double beyond float32's range would become infinity in the model.
  EXPECT_THAT(readFails("a,b\n1,-1e39\n"),
              HasSubstr("line 2, column 'b': '-1e39' is beyond float32's "
                        "range"));
  EXPECT_EQ(readOk("a\n3.4e38\n").values[0], 3.4e38);
  // Underflow is a number (zero or subnormal), as pandas reads it.
  CsvTable t = readOk("a\n1e-400\n4.9e-324\n");
  EXPECT_EQ(t.values[0], 0.0);
  EXPECT_GT(t.values[1], 0.0);
}

TEST_F(CsvTableTest, HeaderNamesMustBeUniqueAndNonEmpty) {
  EXPECT_EQ(readFails("a,b,a\n1,2,3\n"),
            "line 1: the header names column 'a' twice (columns 1 and 3); "
            "column names must be unique");
  EXPECT_THAT(readFails("a, ,c\n1,2,3\n"),
              HasSubstr("line 1: column 2 of the header has no name"));
  EXPECT_THAT(readFails("a,b,\n1,2,3\n"),
              HasSubstr("line 1: column 3 of the header has no name"));
  // Names differ after trimming or not at all.
  EXPECT_THAT(readFails("a , a\n1,2\n"), HasSubstr("names column 'a' twice"));
}

TEST_F(CsvTableTest, HeaderRowIsRequired) {
  EXPECT_THAT(readFails("1,2,3\n4,5,6\n"),
              HasSubstr("line 1: the first row holds numbers, not column "
                        "names; a header row is required"));
}

TEST_F(CsvTableTest, EmptyOrHeaderOnly) {
  EXPECT_THAT(readFails(""), HasSubstr("is empty"));
  EXPECT_THAT(readFails("\n\n  \n"), HasSubstr("is empty"));
  EXPECT_EQ(readFails("a,b\n"),
            "holds no data rows, only the header; a CSV file needs at least "
            "one row of numbers");
  EXPECT_THAT(readFails("a,b"), HasSubstr("holds no data rows"));
  EXPECT_THAT(readFails("a,b\r\n\r\n"), HasSubstr("holds no data rows"));
}

TEST_F(CsvTableTest, QuotingFaults) {
  EXPECT_THAT(readFails("a,b\n1,\"2\n"),
              HasSubstr("line 2: field 2 opens a quote that is never closed"));
  EXPECT_THAT(readFails("a,b\n1,\"2\"3\n"),
              HasSubstr("line 2: field 2 has characters after its closing "
                        "quote"));
}

TEST_F(CsvTableTest, MissingFileAndDirectory) {
  CsvTable t;
  Status s = readCsv(path("missing.csv"), t);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.code(), StatusCode::notFound);
  EXPECT_THAT(s.message(), HasSubstr(path("missing.csv") + ": no such file"));
  s = readCsv(dir_.string(), t);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.code(), StatusCode::invalidInput);
  EXPECT_THAT(s.message(), HasSubstr(dir_.string() + ": is a directory"));
}

} // namespace
} // namespace graph::runtime::data::test
