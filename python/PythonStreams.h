//===- PythonStreams.h - C++ output into Python's streams -------*- C++ -*-===//
//
// graphrun's lines go to Python's sys.stdout and sys.stderr while a job
// runs (a notebook's cell shows them). pybind11's scoped_ostream_redirect
// lets the Python stream's exception through the C++ stream: a write that
// raises (a closed stream, a broken pipe under `| head`, Ctrl-C in a
// notebook's stream) escapes a flush that cannot throw (std::cerr's, a
// stream buffer's destructor), and the process aborts. Here a failed write
// is kept, the text goes to the process's own file descriptor instead,
// and the binding raises the kept exception once the job is over.
//
//===----------------------------------------------------------------------===//

#ifndef GRAPH_PYTHON_PYTHONSTREAMS_H
#define GRAPH_PYTHON_PYTHONSTREAMS_H

#include <pybind11/pybind11.h>

#include <cstring>
#include <optional>
#include <ostream>
#include <streambuf>
#include <string>

#include <unistd.h>

namespace graph::python {

/// A stream buffer writing to a Python text stream, a line at a time (and
/// at each flush), with the GIL taken for the write alone. It never throws:
/// the first exception the Python stream raises is kept (error()), and
/// from then on the text goes to `fd`. Made and destroyed with the GIL
/// held.
class PythonStreamBuf : public std::streambuf {
public:
  /// `stream` None (pythonw, a daemon that closed them): straight to `fd`.
  PythonStreamBuf(const pybind11::object &stream, int fd) : fd_(fd) {
    if (!stream.is_none()) {
      write_ = stream.attr("write");
      flush_ = stream.attr("flush");
    }
  }
  ~PythonStreamBuf() override { drain(); }

  /// The exception a write raised, if one did.
  std::optional<pybind11::error_already_set> &error() { return error_; }

protected:
  int overflow(int c) override {
    if (c == traits_type::eof())
      return traits_type::not_eof(c);
    char ch = traits_type::to_char_type(c);
    xsputn(&ch, 1);
    return c;
  }
  std::streamsize xsputn(const char *s, std::streamsize n) override {
    buffer_.append(s, static_cast<size_t>(n));
    if (std::memchr(s, '\n', static_cast<size_t>(n)))
      drain();
    return n;
  }
  int sync() override {
    drain();
    return 0;
  }

private:
  void drain() noexcept {
    if (buffer_.empty())
      return;
    std::string text;
    text.swap(buffer_);
    if (write_ && !error_) {
      pybind11::gil_scoped_acquire gil;
      try {
        // Invalid UTF-8 (a line cut mid-character) is replaced, not raised.
        pybind11::str line =
            pybind11::reinterpret_steal<pybind11::str>(PyUnicode_DecodeUTF8(
                text.data(), static_cast<Py_ssize_t>(text.size()), "replace"));
        if (!line)
          throw pybind11::error_already_set();
        write_(line);
        flush_();
        return;
      } catch (pybind11::error_already_set &e) {
        error_.emplace(std::move(e));
      }
    }
    // The Python stream failed: nothing is lost, the process's own
    // descriptor takes the text (an error there, a closed pipe, drops it).
    for (size_t done = 0; done < text.size();) {
      ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
      if (n <= 0)
        break;
      done += static_cast<size_t>(n);
    }
  }

  pybind11::object write_, flush_;
  int fd_;
  std::string buffer_;
  std::optional<pybind11::error_already_set> error_;
};

/// Points `os` at a Python stream for its lifetime (GIL held at both ends).
class PythonStreamRedirect {
public:
  PythonStreamRedirect(std::ostream &os, const pybind11::object &stream, int fd)
      : os_(os), buf_(stream, fd), old_(os.rdbuf(&buf_)) {}
  ~PythonStreamRedirect() {
    os_.flush();
    os_.rdbuf(old_);
  }
  PythonStreamRedirect(const PythonStreamRedirect &) = delete;
  PythonStreamRedirect &operator=(const PythonStreamRedirect &) = delete;

  /// Raises what a write to the Python stream raised, if one did.
  void raiseError() {
    if (std::optional<pybind11::error_already_set> &e = buf_.error()) {
      pybind11::error_already_set kept = std::move(*e);
      e.reset();
      throw kept;
    }
  }

private:
  std::ostream &os_;
  PythonStreamBuf buf_;
  std::streambuf *old_;
};

} // namespace graph::python

#endif // GRAPH_PYTHON_PYTHONSTREAMS_H
