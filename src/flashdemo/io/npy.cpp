// npy.cpp — .npy read and write (see npy.hpp for the format); each refusal a FileProblem with its
// facts (file_io.hpp).
#include "flashdemo/io/npy.hpp"

#include "flashdemo/io/file_io.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace fd {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr index_t kMaxElements = index_t(1) << 40;

// An IEEE binary16 pattern as a double (exact): sign, 5 exponent bits (bias 15), 10 fraction bits.
double half_to_double(std::uint16_t h) {
  const int sign = h >> 15, exponent = (h >> 10) & 0x1f, fraction = h & 0x3ff;
  double v;
  if (exponent == 0)
    v = std::ldexp(double(fraction), -24);  // subnormal (or zero)
  else if (exponent == 31)
    v = fraction ? NAN : INFINITY;
  else
    v = std::ldexp(double(fraction | 0x400), exponent - 25);
  return sign ? -v : v;
}

[[noreturn]] void fail(const std::string& path, FileProblem problem,
                       std::vector<std::string> words = {}, std::vector<long long> numbers = {}) {
  FileFacts facts;
  facts.words = std::move(words);
  facts.numbers = std::move(numbers);
  throw NpyError(problem, {"", path}, facts);
}

// A piece of the header as an error quotes it: at most 40 characters (a malformed header may
// hold a megabyte), control characters escaped, so the error stays one short line.
std::string quoted(const std::string& text) {
  constexpr std::size_t kMax = 40;
  std::string out;
  for (std::size_t k = 0; k < text.size() && k < kMax; ++k) {
    const unsigned char c = static_cast<unsigned char>(text[k]);
    char hex[5];
    std::snprintf(hex, sizeof hex, "\\x%02x", c);
    out += c < 0x20 || c >= 0x7f ? std::string(hex) : std::string(1, char(c));
  }
  return text.size() > kMax ? out + "..." : out;
}

// How often the header names `key` (quoted either way).
std::size_t occurrences(const std::string& header, const std::string& key) {
  std::size_t n = 0;
  for (const std::string& q : {"'" + key + "'", "\"" + key + "\""})
    for (std::size_t k = header.find(q); k != std::string::npos; k = header.find(q, k + 1)) ++n;
  return n;
}

// The value of 'key' (or "key": NumPy reads either quote) in the header dict, up to the next
// top-level ',' or '}'.
std::string dict_value(const std::string& header, const std::string& key, const std::string& path) {
  if (occurrences(header, key) > 1)  // NumPy would take the last: refused rather than guessed
    fail(path, FileProblem::repeated_key, {key});
  std::size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) k = header.find("\"" + key + "\"");
  if (k == std::string::npos) fail(path, FileProblem::missing_key, {key});
  std::size_t v = header.find(':', k);
  if (v == std::string::npos) fail(path, FileProblem::malformed_near_key, {key});
  ++v;
  while (v < header.size() && header[v] == ' ') ++v;
  std::size_t end = v;
  if (end < header.size() && header[end] == '(') {
    end = header.find(')', end);
    if (end == std::string::npos) fail(path, FileProblem::malformed_shape);
    return header.substr(v, end - v + 1);
  }
  while (end < header.size() && header[end] != ',' && header[end] != '}') ++end;
  std::string value = header.substr(v, end - v);
  while (!value.empty() && value.back() == ' ') value.pop_back();
  for (char& c : value)
    if (c == '"') c = '\'';  // "<f8" and '<f8' are the same string to NumPy
  return value;
}

std::vector<index_t> parse_shape(const std::string& text, const std::string& path) {
  std::vector<index_t> shape;
  if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    fail(path, FileProblem::shape_not_tuple, {quoted(text)});
  std::string inner = text.substr(1, text.size() - 2);
  std::stringstream ss(inner);
  std::vector<std::string> items;
  for (std::string item; std::getline(ss, item, ',');) items.push_back(item);
  for (std::size_t k = 0; k < items.size(); ++k) {
    std::string item = items[k];
    const auto b = item.find_first_not_of(' '), e = item.find_last_not_of(' ');
    if (b == std::string::npos) {  // only the item after a trailing comma may be empty: (10,)
      if (k + 1 < items.size() || k == 0) fail(path, FileProblem::shape_not_tuple, {quoted(text)});
      continue;
    }
    item = item.substr(b, e - b + 1);
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    if (*end != '\0' || v < 0) fail(path, FileProblem::shape_not_tuple, {quoted(text)});
    shape.push_back(v);
  }
  if (shape.size() > 4)
    fail(path, FileProblem::too_many_dimensions, {quoted(text)},
         {static_cast<long long>(shape.size())});
  return shape;
}

struct Header {
  NpyType type;
  std::vector<index_t> shape;
};

Header parse_header(const std::string& header, const std::string& path) {
  const std::string descr = dict_value(header, "descr", path);
  Header h{};
  if (descr == "'<f8'")
    h.type = NpyType::f8;
  else if (descr == "'<f4'")
    h.type = NpyType::f4;
  else if (descr == "'<f2'")
    h.type = NpyType::f2;
  else
    fail(path, FileProblem::unsupported_dtype, {quoted(descr)});
  if (dict_value(header, "fortran_order", path) != "False") fail(path, FileProblem::fortran_order);
  h.shape = parse_shape(dict_value(header, "shape", path), path);
  return h;
}

// Exactly n bytes of the file's header, or the error saying it was cut short.
std::string read_exact(InputFile& in, std::size_t n, const std::string& path) {
  std::string bytes(n, '\0');
  if (in.read(bytes.data(), n) != n) fail(path, FileProblem::truncated_header);
  return bytes;
}

std::string read_header(InputFile& in, const std::string& path) {
  char magic[6];
  if (in.read(magic, 6) != 6 || std::memcmp(magic, kMagic, 6) != 0)
    fail(path, FileProblem::bad_magic);
  const std::string version = read_exact(in, 2, path);
  const int major = static_cast<unsigned char>(version[0]);
  if (major < 1 || major > 3)
    fail(path, FileProblem::unsupported_version, {},
         {major, static_cast<unsigned char>(version[1])});
  const std::string len_bytes = read_exact(in, major == 1 ? 2 : 4, path);
  std::uint32_t len = 0;
  for (std::size_t k = len_bytes.size(); k-- > 0;)
    len = (len << 8) | static_cast<unsigned char>(len_bytes[k]);
  if (len > (1u << 20)) fail(path, FileProblem::header_too_long, {}, {len});
  return read_exact(in, len, path);
}

// The n data bytes the header promises, read in chunks: memory grows only as bytes arrive, so a
// small file whose header claims gigabytes fails as truncated instead of allocating them.
std::vector<char> read_data(InputFile& in, std::size_t n, std::size_t width,
                            const std::string& path) {
  constexpr std::size_t kChunk = std::size_t(1) << 24;
  std::vector<char> raw;
  std::size_t got = 0;
  while (got < n) {
    raw.resize(got + std::min(kChunk, n - got));
    const std::size_t want = raw.size() - got;
    const std::size_t r = in.read(raw.data() + got, want);
    got += r;
    if (r < want) break;
  }
  if (got < n)
    fail(path, FileProblem::truncated_data, {},
         {static_cast<long long>(n / width), static_cast<long long>(n),
          static_cast<long long>(got)});
  return raw;
}

// The reading itself (read_npy turns a FileError into an NpyError).
NpyArray read_npy_from(const std::string& path, double budget) {
  InputFile in(path);  // a file, a pipe or a FIFO: read as far as the header says, never sought
  const Header h = parse_header(read_header(in, path), path);
  index_t count = 1;
  for (index_t s : h.shape) {
    if (s != 0 && count > kMaxElements / s) fail(path, FileProblem::shape_too_large);
    count *= s;
  }
  const index_t width = h.type == NpyType::f8 ? 8 : h.type == NpyType::f4 ? 4 : 2;
  const double need = double(count) * double(width + 8);  // the bytes read, then as doubles
  if (need > budget) {
    FileFacts facts;
    facts.numbers = {count, static_cast<long long>(need / 1e6),
                     static_cast<long long>(budget / 1e6)};
    throw NpyTooLarge(FileProblem::too_large, {"", path}, facts);
  }
  const std::vector<char> raw = read_data(in, std::size_t(count * width), std::size_t(width), path);
  NpyArray a{h.type, h.shape, std::vector<double>(std::size_t(count))};
  for (index_t k = 0; k < count; ++k) {  // little-endian on every host flashdemo builds for
    if (h.type == NpyType::f8) {
      std::memcpy(&a.data[std::size_t(k)], raw.data() + k * 8, 8);
    } else if (h.type == NpyType::f2) {
      std::uint16_t b;
      std::memcpy(&b, raw.data() + k * 2, 2);
      a.data[std::size_t(k)] = half_to_double(b);
    } else {
      float f;
      std::memcpy(&f, raw.data() + k * 4, 4);
      a.data[std::size_t(k)] = f;
    }
  }
  return a;
}

}  // namespace

NpyArray read_npy(const std::string& path, double budget) {
  try {
    return read_npy_from(path, budget);
  } catch (const NpyError&) {
    throw;
  } catch (const FileError& e) {  // cannot open, cannot read: the same problem
    throw NpyError(e);
  }
}

void require_finite(const NpyArray& a, const std::string& path) {
  for (std::size_t k = 0; k < a.data.size(); ++k) {
    if (std::isfinite(a.data[k])) continue;
    std::string where;  // the element's indices: (r, c), (b, h, r, c); [k] for a vector
    index_t rest = index_t(k);
    for (std::size_t x = a.shape.size(); x-- > 0;) {
      const std::string i = std::to_string(rest % a.shape[x]);
      where = where.empty() ? i : i + ", " + where;
      rest /= a.shape[x];
    }
    where = a.shape.size() >= 2 ? "(" + where + ")" : "[" + std::to_string(k) + "]";
    fail(path, FileProblem::not_finite,
         {where, std::isnan(a.data[k]) ? "nan"
                 : a.data[k] > 0       ? "inf"
                                       : "-inf"});
  }
}

template <class T>
std::string npy_bytes(const T* data, index_t rows, index_t cols) {
  return npy_bytes(data, cols ? std::vector<index_t>{rows, cols} : std::vector<index_t>{rows});
}

template <class T>
std::string npy_bytes(const T* data, const std::vector<index_t>& shape) {
  const char* descr = std::is_same_v<T, float> ? "<f4" : "<f8";
  std::string sizes;  // as Python writes the tuple: (n,), (n, d), (b, h, n, d)
  index_t count = 1;
  for (std::size_t x = 0; x < shape.size(); ++x)
    sizes += (x ? ", " : "") + std::to_string(shape[x]), count *= shape[x];
  if (shape.size() == 1) sizes += ",";
  std::string dict =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" + sizes + "), }";
  const std::size_t unpadded = 10 + dict.size() + 1;  // magic, version, length, dict, '\n'
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  const unsigned char prefix[] = {0x93,
                                  'N',
                                  'U',
                                  'M',
                                  'P',
                                  'Y',
                                  1,
                                  0,
                                  static_cast<unsigned char>(dict.size() & 0xff),
                                  static_cast<unsigned char>(dict.size() >> 8)};
  std::string bytes(reinterpret_cast<const char*>(prefix), sizeof prefix);
  bytes += dict;
  bytes.append(reinterpret_cast<const char*>(data), sizeof(T) * std::size_t(count));
  return bytes;
}

template <class T>
void write_npy(const std::string& path, const T* data, const std::vector<index_t>& shape) {
  try {
    write_file_atomically(path, npy_bytes(data, shape));
  } catch (const FileError& e) {
    throw NpyError(e);
  }
}

template <class T>
void write_npy(const std::string& path, const T* data, index_t rows, index_t cols) {
  write_npy(path, data, cols ? std::vector<index_t>{rows, cols} : std::vector<index_t>{rows});
}

template <class T>
Mat<T> to_matrix(const NpyArray& a) {
  Mat<T> m(a.shape.size() == 2 ? a.shape[0] : index_t(a.data.size()),
           a.shape.size() == 2 ? a.shape[1] : 1);
  for (index_t k = 0; k < m.size(); ++k) m.data()[k] = T(a.data[std::size_t(k)]);
  return m;
}

template void write_npy(const std::string&, const float*, index_t, index_t);
template void write_npy(const std::string&, const float*, const std::vector<index_t>&);
template void write_npy(const std::string&, const double*, const std::vector<index_t>&);
template void write_npy(const std::string&, const double*, index_t, index_t);
template std::string npy_bytes(const float*, index_t, index_t);
template std::string npy_bytes(const float*, const std::vector<index_t>&);
template std::string npy_bytes(const double*, const std::vector<index_t>&);
template std::string npy_bytes(const double*, index_t, index_t);
template Mat<float> to_matrix(const NpyArray&);
template Mat<double> to_matrix(const NpyArray&);

}  // namespace fd
