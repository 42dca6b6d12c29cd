#include "kotml/io/hdf5.hpp"

#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <numeric>

#include "kotml/core/atomic_file.hpp"
#include "kotml/core/error.hpp"
#include "kotml/core/large_vector.hpp"
#include "deflated_chunks.hpp"
#include "hdf5_handle.hpp"
#include "number_conversion.hpp"

static_assert(sizeof(hid_t) == sizeof(std::int64_t), "kotml stores hid_t as int64 (HDF5 >= 1.10)");

namespace kotml::io::h5 {
using detail::Handle;

namespace {

// ------------------------------------------------------------------ errors

void silence_hdf5() {
  static std::once_flag once;
  std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

struct StackWalk {
  std::string outermost;
  std::string innermost;
};

herr_t collect_error(unsigned, const H5E_error2_t* entry, void* data) {
  auto* walk = static_cast<StackWalk*>(data);
  const std::string text = entry->desc ? entry->desc : "";
  if (text.empty()) return 0;
  if (walk->outermost.empty()) walk->outermost = text;
  walk->innermost = text;
  return 0;
}

/// HDF5's own explanation of the last failure, most specific part last, and
/// the stack cleared so the next failure starts afresh.
std::string hdf5_explanation() {
  StackWalk walk;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &walk);
  H5Eclear2(H5E_DEFAULT);
  if (walk.innermost.empty()) return "";
  if (walk.outermost == walk.innermost) return " (HDF5: " + walk.innermost + ")";
  return " (HDF5: " + walk.outermost + ": " + walk.innermost + ")";
}

std::string display(const std::string& object) { return object.empty() ? "/" : object; }

[[noreturn]] void fail(const std::string& file, const std::string& element, const std::string& what) {
  throw Error(file, display(element), what + hdf5_explanation());
}

// A corrupt header can claim absurd sizes; refuse them before allocating.
constexpr std::int64_t max_elements = std::int64_t(1) << 40;

// ----------------------------------------------------------------- handles

Handle checked(hid_t id, Handle::Closer closer, const std::string& file, const std::string& element,
               const std::string& what) {
  if (id < 0) fail(file, element, what);
  return Handle(id, closer);
}

Handle make_plist(hid_t cls) { return Handle(H5Pcreate(cls), H5Pclose); }

/// How a dataset's chunks are read: through a generous (32 MiB) cache, so that
/// row-by-row reads of a compressed matrix do not decompress the same chunk
/// again and again; or, for whole reads, which visit each chunk once, straight
/// into the caller's buffer (HDF5 reads an unfiltered chunk it cannot cache
/// without a copy through the cache).
enum class ChunkCache { shared, bypass };

Handle open_dataset(hid_t file, const std::string& path, const std::string& object,
                    ChunkCache cache = ChunkCache::shared) {
  Handle dapl = make_plist(H5P_DATASET_ACCESS);
  if (cache == ChunkCache::shared)
    H5Pset_chunk_cache(dapl.get(), 12421, std::size_t(32) << 20, 1.0);
  else
    H5Pset_chunk_cache(dapl.get(), 0, 0, 1.0);
  return checked(H5Dopen2(file, object.c_str(), dapl.get()), H5Dclose, path, object,
                 "cannot open dataset");
}

Handle dataset_space(hid_t dataset, const std::string& path, const std::string& object) {
  return checked(H5Dget_space(dataset), H5Sclose, path, object, "cannot read the dataspace");
}

std::vector<std::int64_t> space_dims(hid_t space, const std::string& path, const std::string& object) {
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank < 0) fail(path, object, "cannot read the dimensions");
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0 && H5Sget_simple_extent_dims(space, dims.data(), nullptr) < 0)
    fail(path, object, "cannot read the dimensions");
  std::vector<std::int64_t> out(dims.begin(), dims.end());
  std::int64_t total = 1;
  for (auto d : out) {
    if (d < 0 || d > max_elements || (d > 0 && total > max_elements / d))
      throw Error(path, display(object), "implausible dimensions (damaged file?)");
    total *= d;
  }
  return out;
}

std::int64_t element_count(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

// ------------------------------------------------------------------- types

template <class T>
hid_t native_type() {
  if constexpr (std::is_same_v<T, float>) return H5T_NATIVE_FLOAT;
  else if constexpr (std::is_same_v<T, double>) return H5T_NATIVE_DOUBLE;
  else if constexpr (std::is_same_v<T, std::int8_t>) return H5T_NATIVE_INT8;
  else if constexpr (std::is_same_v<T, std::int16_t>) return H5T_NATIVE_INT16;
  else if constexpr (std::is_same_v<T, std::int32_t>) return H5T_NATIVE_INT32;
  else if constexpr (std::is_same_v<T, std::int64_t>) return H5T_NATIVE_INT64;
  else if constexpr (std::is_same_v<T, std::uint8_t>) return H5T_NATIVE_UINT8;
  else if constexpr (std::is_same_v<T, std::uint16_t>) return H5T_NATIVE_UINT16;
  else if constexpr (std::is_same_v<T, std::uint32_t>) return H5T_NATIVE_UINT32;
  else return H5T_NATIVE_UINT64;
}

/// What numpy/h5py store: little-endian IEEE floats and two's-complement ints.
template <class T>
hid_t file_type() {
  if constexpr (std::is_same_v<T, float>) return H5T_IEEE_F32LE;
  else if constexpr (std::is_same_v<T, double>) return H5T_IEEE_F64LE;
  else if constexpr (std::is_same_v<T, std::int8_t>) return H5T_STD_I8LE;
  else if constexpr (std::is_same_v<T, std::int16_t>) return H5T_STD_I16LE;
  else if constexpr (std::is_same_v<T, std::int32_t>) return H5T_STD_I32LE;
  else if constexpr (std::is_same_v<T, std::int64_t>) return H5T_STD_I64LE;
  else if constexpr (std::is_same_v<T, std::uint8_t>) return H5T_STD_U8LE;
  else if constexpr (std::is_same_v<T, std::uint16_t>) return H5T_STD_U16LE;
  else if constexpr (std::is_same_v<T, std::uint32_t>) return H5T_STD_U32LE;
  else return H5T_STD_U64LE;
}

bool is_bool_enum(hid_t type) {
  if (H5Tget_class(type) != H5T_ENUM || H5Tget_nmembers(type) != 2) return false;
  bool has_false = false, has_true = false;
  for (unsigned i = 0; i < 2; ++i) {
    char* name = H5Tget_member_name(type, i);
    if (!name) return false;
    const std::string n = name;
    H5free_memory(name);
    long long value = 0;
    Handle super(H5Tget_super(type), H5Tclose);
    if (!super.valid() || H5Tget_member_value(type, i, &value) < 0) return false;
    // The value is stored in the enum's base type; only its low byte matters for 0/1.
    const auto size = H5Tget_size(super.get());
    long long decoded = 0;
    std::memcpy(&decoded, &value, std::min<std::size_t>(size, sizeof decoded));
    if (n == "FALSE" && decoded == 0) has_false = true;
    if (n == "TRUE" && decoded == 1) has_true = true;
  }
  return has_false && has_true;
}

TypeInfo describe_type(hid_t type) {
  TypeInfo info;
  info.size = H5Tget_size(type);
  switch (H5Tget_class(type)) {
    case H5T_INTEGER:
      info.is_integer = true;
      info.dtype = std::string(H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") +
                   std::to_string(8 * info.size);
      break;
    case H5T_FLOAT:
      info.is_float = true;
      info.dtype = "float" + std::to_string(8 * info.size);
      break;
    case H5T_ENUM:
      if (is_bool_enum(type)) {
        info.is_bool = true;
        info.dtype = "bool";
      } else {
        info.dtype = "enum<int" + std::to_string(8 * info.size) + ">";
      }
      break;
    case H5T_STRING:
      info.is_string = true;
      info.is_variable_string = H5Tis_variable_str(type) > 0;
      info.dtype = "string";
      break;
    case H5T_REFERENCE: info.dtype = "reference"; break;
    case H5T_COMPOUND: info.dtype = "compound"; break;
    default: info.dtype = "other"; break;
  }
  return info;
}

/// Enums (h5py's bool among them) do not convert to numbers inside HDF5: read
/// their stored integer values and convert here.
template <class T>
void convert_enum_bytes(const std::vector<unsigned char>& bytes, std::size_t width, bool is_signed,
                        T* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char* p = bytes.data() + i * width;
    long long v = 0;
    if (is_signed) {
      switch (width) {
        case 1: { std::int8_t x; std::memcpy(&x, p, 1); v = x; break; }
        case 2: { std::int16_t x; std::memcpy(&x, p, 2); v = x; break; }
        case 4: { std::int32_t x; std::memcpy(&x, p, 4); v = x; break; }
        default: { std::int64_t x; std::memcpy(&x, p, 8); v = x; break; }
      }
    } else {
      switch (width) {
        case 1: { std::uint8_t x; std::memcpy(&x, p, 1); v = x; break; }
        case 2: { std::uint16_t x; std::memcpy(&x, p, 2); v = x; break; }
        case 4: { std::uint32_t x; std::memcpy(&x, p, 4); v = x; break; }
        default: { std::uint64_t x; std::memcpy(&x, p, 8); v = static_cast<long long>(x); break; }
      }
    }
    out[i] = static_cast<T>(v);
  }
}

enum class Source { dataset, attribute };

/// Calls visit(From{}, native type) for the native element type the file's
/// type `file_type` is stored as, among h5::File's ten; false where it is none
/// of them (or visit returns false).
template <class Visit>
bool visit_stored_type(hid_t file_type, const std::string& path, const std::string& element, Visit&& visit) {
  Handle stored = checked(H5Tget_native_type(file_type, H5T_DIR_ASCEND), H5Tclose, path, element,
                          "cannot read the datatype");
  bool done = false, found = false;
  auto attempt = [&](auto tag, hid_t candidate) {
    if (found || H5Tequal(stored.get(), candidate) <= 0) return;
    found = true;
    done = visit(tag, candidate);
  };
  attempt(std::int8_t{}, H5T_NATIVE_INT8);
  attempt(std::int16_t{}, H5T_NATIVE_INT16);
  attempt(std::int32_t{}, H5T_NATIVE_INT32);
  attempt(std::int64_t{}, H5T_NATIVE_INT64);
  attempt(std::uint8_t{}, H5T_NATIVE_UINT8);
  attempt(std::uint16_t{}, H5T_NATIVE_UINT16);
  attempt(std::uint32_t{}, H5T_NATIVE_UINT32);
  attempt(std::uint64_t{}, H5T_NATIVE_UINT64);
  attempt(float{}, H5T_NATIVE_FLOAT);
  attempt(double{}, H5T_NATIVE_DOUBLE);
  return done;
}

/// The error for values HDF5's conversion (or convert_counting) finds outside
/// the asked-for type's range.
template <class T>
[[noreturn]] void fail_out_of_range(const std::string& path, const std::string& element, std::size_t count,
                                    hid_t file_type) {
  throw Error(path, display(element),
              std::to_string(count) + " value(s) of type " + describe_type(file_type).dtype +
                  " overflow on conversion to " + describe_type(native_type<T>()).dtype +
                  " (they are finite in the file)");
}

/// HDF5's element-wise conversion runs through a 1 MiB strip buffer on one
/// thread, several times slower than reading the stored type and widening on
/// the host threads (number_conversion.hpp: int32 sparse indices into int64,
/// int8 category codes into int32, anything into double). Only widening: the
/// stored values are then fewer bytes than the output. Returns false when this
/// path does not apply.
template <class T>
bool read_widening(hid_t dataset, hid_t file_type, hid_t mem_space, hid_t file_space, T* out,
                   std::size_t n, const std::string& path, const std::string& element) {
  return visit_stored_type(file_type, path, element, [&](auto tag, hid_t stored) {
    using From = decltype(tag);
    if constexpr (detail::widens<From, T>()) {
      // Not value-initialised: HDF5 overwrites every element.
      std::unique_ptr<From[]> buffer(new From[n]);
      advise_huge_pages(buffer.get(), n * sizeof(From));
      if (H5Dread(dataset, stored, mem_space, file_space, H5P_DEFAULT, buffer.get()) < 0)
        fail(path, element, "cannot read the values");
      detail::convert_counting(buffer.get(), out, static_cast<std::int64_t>(n));
      return true;
    }
    return false;
  });
}

/// Counts the values HDF5's conversion finds outside the target type's range
/// (1e40 read as float32 would otherwise arrive as inf, and be reported as
/// "NaN or infinite" although the file holds a finite number). HDF5's native
/// float64-to-float32 conversion raises the same exception for ±inf, which
/// stay infinite: those are not counted, and arrive as they are.
H5T_conv_ret_t count_out_of_range(H5T_conv_except_t exception, hid_t source_type, hid_t, void* source, void*,
                                  void* counter) {
  if (exception != H5T_CONV_EXCEPT_RANGE_HI && exception != H5T_CONV_EXCEPT_RANGE_LOW) return H5T_CONV_UNHANDLED;
  if (source != nullptr && H5Tequal(source_type, H5T_NATIVE_DOUBLE) > 0) {
    double value = 0;
    std::memcpy(&value, source, sizeof value);
    if (std::isinf(value)) return H5T_CONV_UNHANDLED;
  }
  ++*static_cast<std::size_t*>(counter);
  return H5T_CONV_UNHANDLED;
}

/// Reads n numbers from a dataset selection (or a whole attribute) into out,
/// converting from any integer, float or enum storage. Values out of T's range
/// are an error, or, with `out_of_range_total`, added to it for the caller to
/// report once over several selections (as one read converting them here
/// would: read_deflated).
template <class T>
void read_numbers(Source source, hid_t object, hid_t mem_space, hid_t file_space, T* out,
                  std::size_t n, const std::string& path, const std::string& element,
                  std::size_t* out_of_range_total = nullptr) {
  Handle type = checked(source == Source::dataset ? H5Dget_type(object) : H5Aget_type(object),
                        H5Tclose, path, element, "cannot read the datatype");
  const H5T_class_t cls = H5Tget_class(type.get());
  if (source == Source::dataset && (cls == H5T_INTEGER || cls == H5T_FLOAT) &&
      read_widening(object, type.get(), mem_space, file_space, out, n, path, element))
    return;
  if (cls == H5T_INTEGER || cls == H5T_FLOAT) {
    std::size_t out_of_range = 0;
    herr_t status = -1;
    if (source == Source::dataset) {
      Handle transfer = checked(H5Pcreate(H5P_DATASET_XFER), H5Pclose, path, element,
                                "cannot make a transfer property list");
      H5Pset_type_conv_cb(transfer.get(), count_out_of_range, &out_of_range);
      status = H5Dread(object, native_type<T>(), mem_space, file_space, transfer.get(), out);
    } else {
      status = H5Aread(object, native_type<T>(), out);
    }
    if (status < 0) fail(path, element, "cannot read the values");
    if (out_of_range_total != nullptr)
      *out_of_range_total += out_of_range;
    else if (out_of_range > 0)
      fail_out_of_range<T>(path, element, out_of_range, type.get());
    return;
  }
  if (cls == H5T_ENUM) {
    Handle mem_type = checked(H5Tget_native_type(type.get(), H5T_DIR_ASCEND), H5Tclose, path,
                              element, "cannot read the enum datatype");
    Handle super = checked(H5Tget_super(mem_type.get()), H5Tclose, path, element,
                           "cannot read the enum base type");
    const std::size_t width = H5Tget_size(mem_type.get());
    if (width != 1 && width != 2 && width != 4 && width != 8)
      throw Error(path, display(element), "unsupported enum width " + std::to_string(width));
    std::vector<unsigned char> bytes(n * width);
    const herr_t status =
        source == Source::dataset
            ? H5Dread(object, mem_type.get(), mem_space, file_space, H5P_DEFAULT, bytes.data())
            : H5Aread(object, mem_type.get(), bytes.data());
    if (status < 0) fail(path, element, "cannot read the values");
    convert_enum_bytes(bytes, width, H5Tget_sign(super.get()) != H5T_SGN_NONE, out, n);
    return;
  }
  throw Error(path, display(element),
              "holds " + describe_type(type.get()).dtype + " values, not numbers");
}

Handle file_type_of(hid_t dataset, const std::string& path, const std::string& element) {
  return checked(H5Dget_type(dataset), H5Tclose, path, element, "cannot read the datatype");
}

/// Elements of a deflated dataset converted per group of ranges (read_deflated).
constexpr std::int64_t conversion_block = std::int64_t(8) << 20;

/// Flattened element ranges of a dataset of shape `dims`, one after another,
/// through the host threads' inflation (deflated_chunks.hpp) when its layout
/// allows, and its stored type is T or one converted on the host threads
/// (number_conversion.hpp); false when HDF5 is to read them.
template <class T>
bool read_deflated(hid_t dataset, const std::vector<std::int64_t>& dims,
                   const std::vector<detail::DeflatedChunks::Range>& ranges, T* out, const std::string& path,
                   const std::string& element) {
  if (const auto chunks = detail::DeflatedChunks::of(dataset, dims, native_type<T>()))
    return chunks->read(ranges, out, path, display(element));
  const Handle file_type(H5Dget_type(dataset), H5Tclose);
  if (!file_type.valid()) {
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  const H5T_class_t cls = H5Tget_class(file_type.get());
  if (cls != H5T_INTEGER && cls != H5T_FLOAT) return false;
  return visit_stored_type(file_type.get(), path, element, [&](auto tag, hid_t stored) {
    using From = decltype(tag);
    if constexpr (detail::converts_here<From, T>()) {
      const auto chunks = detail::DeflatedChunks::of(dataset, dims, stored);
      if (!chunks) return false;
      // The stored values pass through a buffer of at most conversion_block
      // elements, group of ranges by group (a range longer than that is cut):
      // a narrowing read needs no more memory than its output.
      std::int64_t total = 0;
      for (const auto& [begin, end] : ranges) total += end - begin;
      const std::unique_ptr<From[]> buffer(new From[static_cast<std::size_t>(std::min(total, conversion_block))]);
      std::vector<detail::DeflatedChunks::Range> group;
      std::size_t outside = 0;
      T* group_out = out;
      std::int64_t grouped = 0;
      const auto convert_group = [&]() -> bool {
        if (grouped == 0) return true;
        if (!chunks->read(group, buffer.get(), path, display(element))) return false;
        outside += detail::convert_counting(buffer.get(), group_out, grouped);
        group_out += grouped;
        group.clear();
        grouped = 0;
        return true;
      };
      for (auto [begin, end] : ranges) {
        while (begin < end) {
          const std::int64_t take = std::min(end - begin, conversion_block - grouped);
          group.push_back({begin, begin + take});
          grouped += take;
          begin += take;
          if (grouped == conversion_block && !convert_group()) return false;
        }
      }
      if (!convert_group()) return false;
      if (outside > 0) fail_out_of_range<T>(path, element, outside, file_type.get());
      return true;
    }
    return false;
  });
}

/// Reads n strings (variable or fixed length) from a dataset selection or a
/// whole attribute.
std::vector<std::string> read_string_values(Source source, hid_t object, hid_t mem_space,
                                            hid_t file_space, std::size_t n,
                                            const std::string& path, const std::string& element) {
  Handle type = checked(source == Source::dataset ? H5Dget_type(object) : H5Aget_type(object),
                        H5Tclose, path, element, "cannot read the datatype");
  if (H5Tget_class(type.get()) != H5T_STRING)
    throw Error(path, display(element),
                "holds " + describe_type(type.get()).dtype + " values, not strings");
  std::vector<std::string> result(n);
  if (n == 0) return result;
  Handle mem_type = checked(H5Tcopy(H5T_C_S1), H5Tclose, path, element, "cannot make a string type");
  H5Tset_cset(mem_type.get(), H5Tget_cset(type.get()));
  if (H5Tis_variable_str(type.get()) > 0) {
    H5Tset_size(mem_type.get(), H5T_VARIABLE);
    std::vector<char*> pointers(n, nullptr);
    // The library allocates each string; they go back through its own allocator
    // on every exit, a failed read included: a read that fails part-way (a
    // damaged file) has already allocated the strings before the failure.
    struct Reclaim {
      hid_t type;
      std::vector<char*>& strings;
      ~Reclaim() {
        const hsize_t count = strings.size();
        Handle space(H5Screate_simple(1, &count, nullptr), H5Sclose);
#if H5_VERS_MAJOR > 1 || (H5_VERS_MAJOR == 1 && H5_VERS_MINOR >= 12)
        H5Treclaim(type, space.get(), H5P_DEFAULT, strings.data());
#else
        H5Dvlen_reclaim(type, space.get(), H5P_DEFAULT, strings.data());
#endif
      }
    } reclaim{mem_type.get(), pointers};
    const herr_t status =
        source == Source::dataset
            ? H5Dread(object, mem_type.get(), mem_space, file_space, H5P_DEFAULT, pointers.data())
            : H5Aread(object, mem_type.get(), pointers.data());
    if (status < 0) fail(path, element, "cannot read the strings");
    for (std::size_t i = 0; i < n; ++i)
      if (pointers[i]) result[i] = pointers[i];
    return result;
  }
  const std::size_t width = H5Tget_size(type.get());
  const H5T_str_t pad = H5Tget_strpad(type.get());
  H5Tset_size(mem_type.get(), width);
  H5Tset_strpad(mem_type.get(), pad);
  std::vector<char> bytes(n * width + 1, '\0');
  const herr_t status =
      source == Source::dataset
          ? H5Dread(object, mem_type.get(), mem_space, file_space, H5P_DEFAULT, bytes.data())
          : H5Aread(object, mem_type.get(), bytes.data());
  if (status < 0) fail(path, element, "cannot read the strings");
  for (std::size_t i = 0; i < n; ++i) {
    const char* begin = bytes.data() + i * width;
    std::size_t length = 0;
    while (length < width && begin[length] != '\0') ++length;
    if (pad == H5T_STR_SPACEPAD)
      while (length > 0 && begin[length - 1] == ' ') --length;
    result[i].assign(begin, length);
  }
  return result;
}

Handle simple_space(const std::vector<std::int64_t>& shape) {
  if (shape.empty()) return Handle(H5Screate(H5S_SCALAR), H5Sclose);
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  return Handle(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
}

Handle utf8_vlen_string_type() {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  return type;
}

/// h5py's numpy-bool type: an int8 enum {FALSE = 0, TRUE = 1}.
Handle bool_enum_type() {
  Handle type(H5Tenum_create(H5T_NATIVE_INT8), H5Tclose);
  const std::int8_t no = 0, yes = 1;
  H5Tenum_insert(type.get(), "FALSE", &no);
  H5Tenum_insert(type.get(), "TRUE", &yes);
  return type;
}

Handle link_create_plist() {
  Handle lcpl = make_plist(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  H5Pset_char_encoding(lcpl.get(), H5T_CSET_UTF8);
  return lcpl;
}

/// Chunked + gzip when asked for; chunks span whole trailing dimensions and
/// about 256 KiB of rows.
Handle dataset_create_plist(const std::vector<std::int64_t>& shape, std::size_t element_size,
                            int compression_level) {
  Handle dcpl = make_plist(H5P_DATASET_CREATE);
  if (compression_level <= 0 || shape.empty() || element_count(shape) == 0) return dcpl;
  std::vector<hsize_t> chunk(shape.begin(), shape.end());
  std::int64_t row_bytes = static_cast<std::int64_t>(element_size);
  for (std::size_t d = 1; d < shape.size(); ++d) row_bytes *= shape[d];
  const std::int64_t rows = std::max<std::int64_t>(1, (std::int64_t(256) << 10) / std::max<std::int64_t>(1, row_bytes));
  chunk[0] = static_cast<hsize_t>(std::min(shape[0], rows));
  H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data());
  H5Pset_deflate(dcpl.get(), static_cast<unsigned>(std::min(compression_level, 9)));
  return dcpl;
}

std::vector<std::string> split_path(const std::string& object) {
  std::vector<std::string> parts;
  std::string current;
  for (char c : object) {
    if (c == '/') {
      if (!current.empty()) parts.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) parts.push_back(current);
  return parts;
}

std::string parent_of(const std::string& object) {
  const auto parts = split_path(object);
  std::string parent = "/";
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) parent += parts[i] + (i + 2 < parts.size() ? "/" : "");
  return parent;
}

}  // namespace

// =================================================================== File

bool has_hdf5_signature(const std::string& path) {
  static const unsigned char signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  for (std::streamoff offset = 0; offset + 8 <= size; offset = offset == 0 ? 512 : offset * 2) {
    unsigned char bytes[8];
    in.seekg(offset);
    if (!in.read(reinterpret_cast<char*>(bytes), 8)) return false;
    if (std::memcmp(bytes, signature, 8) == 0) return true;
  }
  return false;
}

namespace {

/// Why a path cannot be opened as an HDF5 file, in words a user can act on.
void check_openable(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status))
    throw Error(path, "", "no such file");
  if (std::filesystem::is_directory(status)) throw Error(path, "", "is a directory, not a file");
  // Reading a FIFO would block, and a device may never end.
  if (!std::filesystem::is_regular_file(status))
    throw Error(path, "", "is not a regular file (a device, FIFO or socket)");
  if (::access(path.c_str(), R_OK) != 0)
    throw Error(path, "", std::string("cannot read: ") + std::strerror(errno));
  if (!has_hdf5_signature(path))
    throw Error(path, "", "not an HDF5 file (no HDF5 signature)");
}

}  // namespace

File File::open_read(const std::string& path) {
  silence_hdf5();
  check_openable(path);
  verify_readable(path);
  return open_read_unverified(path);
}

File File::open_read_unverified(const std::string& path) {
  silence_hdf5();
  check_openable(path);
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0) throw Error(path, "", "cannot open the HDF5 file; it may be truncated or damaged" +
                                        hdf5_explanation());
  return File(id, path);
}

namespace {

// File-image callbacks that hand HDF5 the caller's bytes instead of copies.
// By default an image is copied twice per open (into the property list, then
// into the core driver), two fresh buffers of the image's size, which the
// fuzzers paid on every input. The udata is the image itself: "allocating" an
// image returns it, "copying" it onto itself does nothing, and nothing is
// freed. Only a read-only open may use them: a write would need realloc.
void* image_in_place(std::size_t, H5FD_file_image_op_t, void* image) { return image; }
void* copy_in_place(void* destination, const void* source, std::size_t, H5FD_file_image_op_t, void*) {
  return destination == source ? destination : nullptr;
}
void* no_realloc(void*, std::size_t, H5FD_file_image_op_t, void*) { return nullptr; }
herr_t free_nothing(void*, H5FD_file_image_op_t, void*) { return 0; }
void* share_image(void* image) { return image; }
herr_t release_nothing(void*) { return 0; }

}  // namespace

File File::open_image(const std::string& name, const void* bytes, std::size_t size) {
  silence_hdf5();
  Handle fapl = make_plist(H5P_FILE_ACCESS);
  void* image = const_cast<void*>(bytes);  // HDF5's API is not const; a read-only open never writes
  H5FD_file_image_callbacks_t in_place = {image_in_place, copy_in_place, no_realloc, free_nothing,
                                          share_image,    release_nothing, image};
  if (H5Pset_fapl_core(fapl.get(), 1 << 16, /*backing_store=*/false) < 0 ||
      H5Pset_file_image_callbacks(fapl.get(), &in_place) < 0 || H5Pset_file_image(fapl.get(), image, size) < 0)
    throw InternalError(name + ": cannot set up HDF5's in-memory driver" + hdf5_explanation());
  const hid_t id = H5Fopen(name.c_str(), H5F_ACC_RDONLY, fapl.get());
  if (id < 0) throw Error(name, "", "cannot open the in-memory HDF5 image" + hdf5_explanation());
  return File(id, name);
}

File File::open_rw(const std::string& path) {
  silence_hdf5();
  check_openable(path);
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (id < 0)
    throw Error(path, "", "cannot open the HDF5 file for writing" + hdf5_explanation());
  return File(id, path);
}

File File::create(const std::string& path) {
  silence_hdf5();
  // Creation order is tracked so children() lists members in the order written.
  Handle fcpl = make_plist(H5P_FILE_CREATE);
  H5Pset_link_creation_order(fcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  const hid_t id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, fcpl.get(), H5P_DEFAULT);
  if (id < 0) throw Error(path, "", "cannot create the HDF5 file" + hdf5_explanation());
  return File(id, path);
}

File File::create(const AtomicFile& output) {
  File file = create(output.temporary_path());
  file.path_ = output.target_path();
  return file;
}

File::File(File&& other) noexcept : id_(other.id_), path_(std::move(other.path_)) { other.id_ = -1; }

File& File::operator=(File&& other) noexcept {
  if (this != &other) {
    if (id_ >= 0) H5Fclose(id_);
    id_ = other.id_;
    path_ = std::move(other.path_);
    other.id_ = -1;
  }
  return *this;
}

File::~File() {
  if (id_ >= 0) H5Fclose(id_);
}

void File::close() {
  if (id_ < 0) return;
  const hid_t id = id_;
  id_ = -1;
  if (H5Fclose(id) < 0) fail(path_, "", "cannot finish writing the file");
}

// --------------------------------------------------------------- structure

bool File::exists(const std::string& object) const {
  const auto parts = split_path(object);
  std::string prefix;
  for (const auto& part : parts) {
    prefix += "/" + part;
    const htri_t link = H5Lexists(id_, prefix.c_str(), H5P_DEFAULT);
    if (link <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
    const htri_t resolves = H5Oexists_by_name(id_, prefix.c_str(), H5P_DEFAULT);
    if (resolves <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
  }
  return true;
}

namespace {
#if H5_VERSION_GE(1, 12, 0)
using ObjectInfo = H5O_info2_t;
#else
using ObjectInfo = H5O_info_t;
#endif

// The object header's basic fields only (type, address): opening the object
// instead (H5Oopen) builds a whole dataset (datatype, dataspace, layout,
// filters), and every require_dataset paid that once more than the read that
// followed it. False, with HDF5's error stack cleared, where nothing is there.
bool object_info(hid_t file, const std::string& object, ObjectInfo& info) {
  const char* name = object.empty() ? "/" : object.c_str();
#if H5_VERSION_GE(1, 12, 0)
  const herr_t status = H5Oget_info_by_name3(file, name, &info, H5O_INFO_BASIC, H5P_DEFAULT);
#else
  const herr_t status = H5Oget_info_by_name2(file, name, &info, H5O_INFO_BASIC, H5P_DEFAULT);
#endif
  if (status < 0) H5Eclear2(H5E_DEFAULT);
  return status >= 0;
}

H5O_type_t object_kind(hid_t file, const std::string& object) {
  ObjectInfo info;
  return object_info(file, object, info) ? info.type : H5O_TYPE_UNKNOWN;
}
}  // namespace

bool File::same_object(const std::string& a, const std::string& b) const {
  ObjectInfo first, second;
  if (!object_info(id_, a, first)) fail(path_, a, "cannot read its object header");
  if (!object_info(id_, b, second)) fail(path_, b, "cannot read its object header");
#if H5_VERSION_GE(1, 12, 0)
  int order = 0;
  if (H5Otoken_cmp(id_, &first.token, &second.token, &order) < 0) fail(path_, b, "cannot compare it with " + a);
  return first.fileno == second.fileno && order == 0;
#else
  return first.fileno == second.fileno && first.addr == second.addr;
#endif
}

bool File::is_group(const std::string& object) const {
  return exists(object) && object_kind(id_, object) == H5O_TYPE_GROUP;
}

bool File::is_dataset(const std::string& object) const {
  return exists(object) && object_kind(id_, object) == H5O_TYPE_DATASET;
}

namespace {
/// Error unless `dataset` is one; says what is there instead when it is not.
void require_dataset(const File& file, const std::string& dataset) {
  if (file.is_dataset(dataset)) return;
  throw Error(file.path(), display(dataset),
              file.is_group(dataset) ? "is a group where a dataset was expected"
              : file.exists(dataset) ? "is not a dataset"
                                     : "no such dataset");
}
}  // namespace

std::vector<std::string> File::children(const std::string& group) const {
  if (!is_group(group)) throw Error(path_, display(group), "no such group");
  Handle g = checked(H5Gopen2(id_, group.empty() ? "/" : group.c_str(), H5P_DEFAULT), H5Gclose,
                     path_, group, "cannot open group");
  H5G_info_t info;
  if (H5Gget_info(g.get(), &info) < 0) fail(path_, group, "cannot list the group");
  // Creation order where the file indexes it (kotml and h5py with track_order),
  // name order otherwise.
  H5_index_t index = H5_INDEX_NAME;
  {
    Handle gcpl(H5Gget_create_plist(g.get()), H5Pclose);
    unsigned flags = 0;
    if (gcpl.valid() && H5Pget_link_creation_order(gcpl.get(), &flags) >= 0 &&
        (flags & H5P_CRT_ORDER_INDEXED))
      index = H5_INDEX_CRT_ORDER;
  }
  std::vector<std::string> names;
  names.reserve(info.nlinks);
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t length = H5Lget_name_by_idx(g.get(), ".", index, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (length < 0) fail(path_, group, "cannot read a member name");
    std::string name(static_cast<std::size_t>(length) + 1, '\0');
    if (H5Lget_name_by_idx(g.get(), ".", index, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT) < 0)
      fail(path_, group, "cannot read a member name");
    name.resize(static_cast<std::size_t>(length));
    names.push_back(std::move(name));
  }
  return names;
}

std::vector<std::int64_t> File::shape(const std::string& dataset) const {
  require_dataset(*this, dataset);
  Handle d = open_dataset(id_, path_, dataset);
  Handle space = dataset_space(d.get(), path_, dataset);
  return space_dims(space.get(), path_, dataset);
}

std::int64_t File::size(const std::string& dataset) const { return element_count(shape(dataset)); }

TypeInfo File::type(const std::string& dataset) const {
  require_dataset(*this, dataset);
  Handle d = open_dataset(id_, path_, dataset);
  Handle t = checked(H5Dget_type(d.get()), H5Tclose, path_, dataset, "cannot read the datatype");
  return describe_type(t.get());
}

// ------------------------------------------------------------------ reading

template <class T>
std::vector<T> File::read(const std::string& dataset) const {
  static_assert(is_numeric_v<T>, "h5::File::read: unsupported element type");
  require_dataset(*this, dataset);
  Handle d = open_dataset(id_, path_, dataset, ChunkCache::bypass);
  Handle space = dataset_space(d.get(), path_, dataset);
  const auto dims = space_dims(space.get(), path_, dataset);
  const auto n = static_cast<std::size_t>(element_count(dims));
  auto values = large_vector<T>(n);
  if (n > 0 && !read_deflated(d.get(), dims, {{0, static_cast<std::int64_t>(n)}}, values.data(), path_, dataset))
    read_numbers(Source::dataset, d.get(), H5S_ALL, H5S_ALL, values.data(), n, path_, dataset);
  return values;
}

template <class T>
std::vector<T> File::read_range(const std::string& dataset, std::int64_t begin, std::int64_t end) const {
  static_assert(is_numeric_v<T>, "h5::File::read_range: unsupported element type");
  require_dataset(*this, dataset);
  Handle d = open_dataset(id_, path_, dataset);
  Handle space = dataset_space(d.get(), path_, dataset);
  const auto dims = space_dims(space.get(), path_, dataset);
  if (dims.size() != 1)
    throw Error(path_, display(dataset), "expected a 1-D dataset, found " +
                                             std::to_string(dims.size()) + " dimensions");
  if (begin < 0 || end < begin || end > dims[0])
    throw Error(path_, display(dataset), "range [" + std::to_string(begin) + ", " +
                                             std::to_string(end) + ") lies outside its " +
                                             std::to_string(dims[0]) + " elements");
  auto values = large_vector<T>(static_cast<std::size_t>(end - begin));
  if (values.empty()) return values;
  if (read_deflated(d.get(), dims, {{begin, end}}, values.data(), path_, dataset)) return values;
  const hsize_t start = static_cast<hsize_t>(begin), count = values.size();
  H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr);
  Handle mem(H5Screate_simple(1, &count, nullptr), H5Sclose);
  read_numbers(Source::dataset, d.get(), mem.get(), space.get(), values.data(), values.size(), path_,
               dataset);
  return values;
}

template <class T>
std::vector<T> File::read_ranges(const std::string& dataset,
                                 const std::vector<std::pair<std::int64_t, std::int64_t>>& ranges) const {
  static_assert(is_numeric_v<T>, "h5::File::read_ranges: unsupported element type");
  require_dataset(*this, dataset);
  Handle d = open_dataset(id_, path_, dataset);
  Handle space = dataset_space(d.get(), path_, dataset);
  const auto dims = space_dims(space.get(), path_, dataset);
  if (dims.size() != 1)
    throw Error(path_, display(dataset), "expected a 1-D dataset, found " +
                                             std::to_string(dims.size()) + " dimensions");
  std::int64_t total = 0;
  for (const auto& [begin, end] : ranges) {
    if (begin < 0 || end < begin || end > dims[0])
      throw Error(path_, display(dataset), "range [" + std::to_string(begin) + ", " +
                                               std::to_string(end) + ") lies outside its " +
                                               std::to_string(dims[0]) + " elements");
    total += end - begin;
  }
  auto values = large_vector<T>(static_cast<std::size_t>(total));
  if (read_deflated(d.get(), dims, ranges, values.data(), path_, dataset)) return values;
  std::size_t offset = 0, out_of_range = 0;
  for (const auto& [begin, end] : ranges) {
    if (end == begin) continue;
    const hsize_t start = static_cast<hsize_t>(begin), count = static_cast<hsize_t>(end - begin);
    if (H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr) < 0)
      fail(path_, dataset, "cannot select a range");
    Handle mem(H5Screate_simple(1, &count, nullptr), H5Sclose);
    read_numbers(Source::dataset, d.get(), mem.get(), space.get(), values.data() + offset,
                 static_cast<std::size_t>(count), path_, dataset, &out_of_range);
    offset += static_cast<std::size_t>(count);
  }
  if (out_of_range > 0) fail_out_of_range<T>(path_, dataset, out_of_range, file_type_of(d.get(), path_, dataset).get());
  return values;
}

template <class T>
std::vector<T> File::read_row_range(const std::string& dataset, std::int64_t begin,
                                    std::int64_t end) const {
  static_assert(is_numeric_v<T>, "h5::File::read_row_range: unsupported element type");
  require_dataset(*this, dataset);
  Handle d = open_dataset(id_, path_, dataset);
  Handle space = dataset_space(d.get(), path_, dataset);
  const auto dims = space_dims(space.get(), path_, dataset);
  if (dims.empty()) throw Error(path_, display(dataset), "is a scalar, it has no rows");
  if (begin < 0 || end < begin || end > dims[0])
    throw Error(path_, display(dataset), "rows [" + std::to_string(begin) + ", " +
                                             std::to_string(end) + ") lie outside its " +
                                             std::to_string(dims[0]) + " rows");
  std::int64_t row_length = 1;
  for (std::size_t k = 1; k < dims.size(); ++k) row_length *= dims[k];
  auto values = large_vector<T>(static_cast<std::size_t>((end - begin) * row_length));
  if (values.empty()) return values;
  if (read_deflated(d.get(), dims, {{begin * row_length, end * row_length}}, values.data(), path_, dataset))
    return values;
  std::vector<hsize_t> start(dims.size(), 0), count(dims.begin(), dims.end());
  start[0] = static_cast<hsize_t>(begin);
  count[0] = static_cast<hsize_t>(end - begin);
  H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr);
  const hsize_t total = values.size();
  Handle mem(H5Screate_simple(1, &total, nullptr), H5Sclose);
  read_numbers(Source::dataset, d.get(), mem.get(), space.get(), values.data(), values.size(), path_,
               dataset);
  return values;
}

template <class T>
std::vector<T> File::read_rows(const std::string& dataset,
                               const std::vector<std::int64_t>& rows) const {
  static_assert(is_numeric_v<T>, "h5::File::read_rows: unsupported element type");
  require_dataset(*this, dataset);
  Handle d = open_dataset(id_, path_, dataset);
  Handle space = dataset_space(d.get(), path_, dataset);
  const auto dims = space_dims(space.get(), path_, dataset);
  if (dims.empty()) throw Error(path_, display(dataset), "is a scalar, it has no rows");
  std::int64_t row_length = 1;
  for (std::size_t k = 1; k < dims.size(); ++k) row_length *= dims[k];
  for (auto r : rows)
    if (r < 0 || r >= dims[0])
      throw Error(path_, display(dataset), "row " + std::to_string(r) + " lies outside its " +
                                               std::to_string(dims[0]) + " rows");
  std::vector<std::int64_t> unique(rows);
  std::sort(unique.begin(), unique.end());
  unique.erase(std::unique(unique.begin(), unique.end()), unique.end());

  std::vector<T> unique_values(unique.size() * static_cast<std::size_t>(row_length));
  // Compressed chunks: each run of consecutive rows is one range, and a chunk
  // that several runs touch is inflated once.
  std::vector<detail::DeflatedChunks::Range> runs;
  for (std::size_t first = 0; first < unique.size();) {
    std::size_t last = first;
    while (last + 1 < unique.size() && unique[last + 1] == unique[last] + 1) ++last;
    runs.push_back({unique[first] * row_length, (unique[last] + 1) * row_length});
    first = last + 1;
  }
  if (row_length > 0 && !unique.empty() &&
      !read_deflated(d.get(), dims, runs, unique_values.data(), path_, dataset)) {
    // Rows close together are read as one block (a few unwanted rows cost less
    // than another read call); far-apart groups get their own read.
    const std::int64_t row_bytes = row_length * static_cast<std::int64_t>(sizeof(T));
    const std::int64_t max_gap = std::max<std::int64_t>(1, (std::int64_t(64) << 10) / row_bytes);
    std::vector<T> block;
    std::size_t first = 0, block_out_of_range = 0;
    while (first < unique.size()) {
      std::size_t last = first;
      while (last + 1 < unique.size() && unique[last + 1] - unique[last] <= max_gap) ++last;
      const std::int64_t block_begin = unique[first], block_rows = unique[last] - block_begin + 1;
      std::vector<hsize_t> start(dims.size(), 0), count(dims.begin(), dims.end());
      start[0] = static_cast<hsize_t>(block_begin);
      count[0] = static_cast<hsize_t>(block_rows);
      if (H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr) < 0)
        fail(path_, dataset, "cannot select rows");
      block.resize(static_cast<std::size_t>(block_rows * row_length));
      const hsize_t total = block.size();
      Handle mem(H5Screate_simple(1, &total, nullptr), H5Sclose);
      read_numbers(Source::dataset, d.get(), mem.get(), space.get(), block.data(), block.size(),
                   path_, dataset, &block_out_of_range);
      for (std::size_t u = first; u <= last; ++u)
        std::copy_n(block.data() + (unique[u] - block_begin) * row_length, row_length,
                    unique_values.data() + u * static_cast<std::size_t>(row_length));
      first = last + 1;
    }
    // The blocks hold rows between the wanted ones, whose values do not count.
    // Rare (the read fails): the wanted rows counted again, run by run.
    if (block_out_of_range > 0) {
      std::size_t out_of_range = 0;
      std::vector<hsize_t> start(dims.size(), 0), count(dims.begin(), dims.end());
      for (const auto& [begin, end] : runs) {
        start[0] = static_cast<hsize_t>(begin / row_length);
        count[0] = static_cast<hsize_t>((end - begin) / row_length);
        if (H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr) < 0)
          fail(path_, dataset, "cannot select rows");
        std::vector<T> run(static_cast<std::size_t>(end - begin));
        const hsize_t run_total = run.size();
        Handle run_mem(H5Screate_simple(1, &run_total, nullptr), H5Sclose);
        read_numbers(Source::dataset, d.get(), run_mem.get(), space.get(), run.data(), run.size(), path_, dataset,
                     &out_of_range);
      }
      if (out_of_range > 0)
        fail_out_of_range<T>(path_, dataset, out_of_range, file_type_of(d.get(), path_, dataset).get());
    }
  }
  if (unique.size() == rows.size() && std::equal(unique.begin(), unique.end(), rows.begin()))
    return unique_values;
  auto values = large_vector<T>(rows.size() * static_cast<std::size_t>(row_length));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto u = static_cast<std::size_t>(std::lower_bound(unique.begin(), unique.end(), rows[i]) - unique.begin());
    std::copy_n(unique_values.data() + u * row_length, row_length, values.data() + i * row_length);
  }
  return values;
}

std::vector<std::string> File::read_strings(const std::string& dataset) const {
  require_dataset(*this, dataset);
  Handle d = open_dataset(id_, path_, dataset);
  Handle space = dataset_space(d.get(), path_, dataset);
  const auto n = static_cast<std::size_t>(element_count(space_dims(space.get(), path_, dataset)));
  return read_string_values(Source::dataset, d.get(), H5S_ALL, H5S_ALL, n, path_, dataset);
}

std::vector<std::string> File::read_strings_range(const std::string& dataset, std::int64_t begin,
                                                  std::int64_t end) const {
  require_dataset(*this, dataset);
  Handle d = open_dataset(id_, path_, dataset);
  Handle space = dataset_space(d.get(), path_, dataset);
  const auto dims = space_dims(space.get(), path_, dataset);
  if (dims.size() != 1)
    throw Error(path_, display(dataset), "expected a 1-D dataset, found " +
                                             std::to_string(dims.size()) + " dimensions");
  if (begin < 0 || end < begin || end > dims[0])
    throw Error(path_, display(dataset), "range [" + std::to_string(begin) + ", " +
                                             std::to_string(end) + ") lies outside its " +
                                             std::to_string(dims[0]) + " elements");
  if (end == begin) return {};
  const hsize_t start = static_cast<hsize_t>(begin), count = static_cast<hsize_t>(end - begin);
  H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr);
  Handle mem(H5Screate_simple(1, &count, nullptr), H5Sclose);
  return read_string_values(Source::dataset, d.get(), mem.get(), space.get(),
                            static_cast<std::size_t>(count), path_, dataset);
}

std::string File::read_string(const std::string& dataset) const {
  const auto values = read_strings(dataset);
  if (values.size() != 1)
    throw Error(path_, display(dataset), "expected one string, found " + std::to_string(values.size()));
  return values[0];
}

// --------------------------------------------------------------- attributes

bool File::has_attribute(const std::string& object, const std::string& name) const {
  if (!exists(object)) return false;
  const htri_t found = H5Aexists_by_name(id_, object.empty() ? "/" : object.c_str(), name.c_str(), H5P_DEFAULT);
  if (found < 0) H5Eclear2(H5E_DEFAULT);
  return found > 0;
}

std::vector<std::string> File::attribute_names(const std::string& object) const {
  if (!exists(object)) throw Error(path_, display(object), "no such object");
  Handle o = checked(H5Oopen(id_, object.empty() ? "/" : object.c_str(), H5P_DEFAULT), H5Oclose,
                     path_, object, "cannot open");
  const int count = H5Aget_num_attrs(o.get());
  if (count < 0) fail(path_, object, "cannot list attributes");
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    const ssize_t length = H5Aget_name_by_idx(o.get(), ".", H5_INDEX_NAME, H5_ITER_INC,
                                              static_cast<hsize_t>(i), nullptr, 0, H5P_DEFAULT);
    if (length < 0) fail(path_, object, "cannot read an attribute name");
    std::string name(static_cast<std::size_t>(length) + 1, '\0');
    H5Aget_name_by_idx(o.get(), ".", H5_INDEX_NAME, H5_ITER_INC, static_cast<hsize_t>(i),
                       name.data(), name.size(), H5P_DEFAULT);
    name.resize(static_cast<std::size_t>(length));
    names.push_back(std::move(name));
  }
  return names;
}

namespace {

struct OpenAttribute {
  Handle attribute;
  std::size_t count = 0;
  std::string element;  // "object@name", for messages
};

OpenAttribute open_attribute(hid_t file, const std::string& path, const std::string& object,
                             const std::string& name) {
  OpenAttribute a;
  a.element = display(object) + "@" + name;
  const char* where = object.empty() ? "/" : object.c_str();
  const htri_t found = H5Aexists_by_name(file, where, name.c_str(), H5P_DEFAULT);
  if (found <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw Error(path, a.element, "no such attribute");
  }
  a.attribute = checked(H5Aopen_by_name(file, where, name.c_str(), H5P_DEFAULT, H5P_DEFAULT),
                        H5Aclose, path, a.element, "cannot open attribute");
  Handle space = checked(H5Aget_space(a.attribute.get()), H5Sclose, path, a.element,
                         "cannot read the attribute's dataspace");
  const hssize_t points = H5Sget_simple_extent_npoints(space.get());
  if (points < 0 || points > max_elements)
    throw Error(path, a.element, "implausible attribute size (damaged file?)");
  a.count = static_cast<std::size_t>(points);
  return a;
}

}  // namespace

TypeInfo File::attribute_type(const std::string& object, const std::string& name) const {
  auto a = open_attribute(id_, path_, object, name);
  Handle t = checked(H5Aget_type(a.attribute.get()), H5Tclose, path_, a.element,
                     "cannot read the datatype");
  return describe_type(t.get());
}

std::string File::read_string_attribute(const std::string& object, const std::string& name) const {
  auto a = open_attribute(id_, path_, object, name);
  if (a.count != 1)
    throw Error(path_, a.element, "expected one string, found " + std::to_string(a.count));
  return read_string_values(Source::attribute, a.attribute.get(), H5S_ALL, H5S_ALL, 1, path_,
                            a.element)[0];
}

std::vector<std::string> File::read_string_array_attribute(const std::string& object,
                                                           const std::string& name) const {
  auto a = open_attribute(id_, path_, object, name);
  if (a.count == 0) return {};
  return read_string_values(Source::attribute, a.attribute.get(), H5S_ALL, H5S_ALL, a.count, path_,
                            a.element);
}

template <class T>
std::vector<T> File::read_numeric_attribute(const std::string& object, const std::string& name) const {
  static_assert(is_numeric_v<T>, "h5::File::read_numeric_attribute: unsupported element type");
  auto a = open_attribute(id_, path_, object, name);
  std::vector<T> values(a.count);
  if (a.count > 0)
    read_numbers(Source::attribute, a.attribute.get(), H5S_ALL, H5S_ALL, values.data(), a.count,
                 path_, a.element);
  return values;
}

std::string File::read_reference_attribute(const std::string& object, const std::string& name) const {
  auto a = open_attribute(id_, path_, object, name);
  Handle type = checked(H5Aget_type(a.attribute.get()), H5Tclose, path_, a.element,
                        "cannot read the datatype");
  if (H5Tget_class(type.get()) != H5T_REFERENCE || H5Tequal(type.get(), H5T_STD_REF_OBJ) <= 0 ||
      a.count != 1)
    throw Error(path_, a.element, "is not a single object reference");
  hobj_ref_t reference;
  if (H5Aread(a.attribute.get(), H5T_STD_REF_OBJ, &reference) < 0)
    fail(path_, a.element, "cannot read the reference");
  Handle target = checked(H5Rdereference2(id_, H5P_DEFAULT, H5R_OBJECT, &reference), H5Oclose,
                          path_, a.element, "the reference points nowhere");
  const ssize_t length = H5Iget_name(target.get(), nullptr, 0);
  if (length <= 0) fail(path_, a.element, "the referenced object has no name");
  std::string target_path(static_cast<std::size_t>(length) + 1, '\0');
  H5Iget_name(target.get(), target_path.data(), target_path.size());
  target_path.resize(static_cast<std::size_t>(length));
  return target_path;
}

// ------------------------------------------------------------------ writing

void File::create_group(const std::string& path) {
  if (split_path(path).empty() || is_group(path)) return;
  if (exists(path)) throw Error(path_, display(path), "exists and is not a group");
  Handle lcpl = link_create_plist();
  Handle gcpl = make_plist(H5P_GROUP_CREATE);
  H5Pset_link_creation_order(gcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  checked(H5Gcreate2(id_, path.c_str(), lcpl.get(), gcpl.get(), H5P_DEFAULT), H5Gclose, path_, path,
          "cannot create group");
}

void File::remove(const std::string& object) {
  if (!exists(object)) return;
  if (H5Ldelete(id_, object.c_str(), H5P_DEFAULT) < 0) fail(path_, object, "cannot remove");
}

void File::hard_link(const std::string& target, const std::string& link) {
  create_group(parent_of(link));
  Handle lcpl = link_create_plist();
  if (H5Lcreate_hard(id_, target.c_str(), id_, link.c_str(), lcpl.get(), H5P_DEFAULT) < 0)
    fail(path_, link, "cannot link it to " + target);
}

bool File::is_compressed(const std::string& dataset) const {
  Handle d = open_dataset(id_, path_, dataset);
  Handle dcpl = checked(H5Dget_create_plist(d.get()), H5Pclose, path_, dataset, "cannot read its creation properties");
  return H5Pget_nfilters(dcpl.get()) > 0;
}

void File::copy_from(const File& source, const std::string& object) {
  create_group(parent_of(object));
  Handle lcpl = link_create_plist();
  if (H5Ocopy(source.id(), object.c_str(), id_, object.c_str(), H5P_DEFAULT, lcpl.get()) < 0)
    fail(path_, object, "cannot copy it from " + source.path());
}

namespace {

/// Replaces `dataset` with a new one of this type, shape and creation plist.
Handle create_dataset_with(File& file, hid_t type, const std::string& dataset,
                           const std::vector<std::int64_t>& shape, const Handle& dcpl) {
  file.remove(dataset);
  file.create_group(parent_of(dataset));
  Handle space = simple_space(shape);
  Handle lcpl = link_create_plist();
  return checked(H5Dcreate2(file.id(), dataset.c_str(), type, space.get(), lcpl.get(), dcpl.get(),
                            H5P_DEFAULT),
                 H5Dclose, file.path(), dataset, "cannot create dataset");
}

/// Creates a dataset of the given type and shape, replacing any old one.
Handle create_dataset_of(File& file, hid_t type, const std::string& dataset,
                         const std::vector<std::int64_t>& shape, int compression_level) {
  return create_dataset_with(file, type, dataset, shape,
                             dataset_create_plist(shape, H5Tget_size(type), compression_level));
}

void check_shape(const std::string& path, const std::string& dataset, std::size_t count,
                 const std::vector<std::int64_t>& shape) {
  for (auto d : shape)
    if (d < 0) throw Error(path, display(dataset), "negative dimension in shape");
  if (static_cast<std::int64_t>(count) != element_count(shape))
    throw Error(path, display(dataset), std::to_string(count) + " values do not fill a shape of " +
                                            std::to_string(element_count(shape)) + " elements");
}

}  // namespace

template <class T>
void File::write(const std::string& dataset, const std::vector<T>& data,
                 const std::vector<std::int64_t>& shape, int compression_level) {
  static_assert(is_numeric_v<T>, "h5::File::write: unsupported element type");
  check_shape(path_, dataset, data.size(), shape);
  Handle d = create_dataset_of(*this, file_type<T>(), dataset, shape, compression_level);
  if (!data.empty() && H5Dwrite(d.get(), native_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) < 0)
    fail(path_, dataset, "cannot write dataset");
}

void File::write_bools(const std::string& dataset, const std::vector<std::uint8_t>& values,
                       const std::vector<std::int64_t>& shape) {
  check_shape(path_, dataset, values.size(), shape);
  Handle type = bool_enum_type();
  Handle d = create_dataset_of(*this, type.get(), dataset, shape, 0);
  std::vector<std::int8_t> normalised(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) normalised[i] = values[i] ? 1 : 0;
  if (!values.empty() && H5Dwrite(d.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, normalised.data()) < 0)
    fail(path_, dataset, "cannot write dataset");
}

void File::write_strings(const std::string& dataset, const std::vector<std::string>& values) {
  Handle type = utf8_vlen_string_type();
  Handle d = create_dataset_of(*this, type.get(), dataset, {static_cast<std::int64_t>(values.size())}, 0);
  std::vector<const char*> pointers(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) pointers[i] = values[i].c_str();
  if (!values.empty() && H5Dwrite(d.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data()) < 0)
    fail(path_, dataset, "cannot write strings");
}

void File::write_string(const std::string& dataset, const std::string& value) {
  Handle type = utf8_vlen_string_type();
  Handle d = create_dataset_of(*this, type.get(), dataset, {}, 0);
  const char* pointer = value.c_str();
  if (H5Dwrite(d.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &pointer) < 0)
    fail(path_, dataset, "cannot write string");
}

template <class T>
void File::create_dataset(const std::string& dataset, const std::vector<std::int64_t>& shape,
                          int compression_level) {
  static_assert(is_numeric_v<T>, "h5::File::create_dataset: unsupported element type");
  for (auto d : shape)
    if (d < 0) throw Error(path_, display(dataset), "negative dimension in shape");
  create_dataset_of(*this, file_type<T>(), dataset, shape, compression_level);
}

template <class T>
std::optional<File::RawExtent> File::create_preallocated_dataset(const std::string& dataset,
                                                                 const std::vector<std::int64_t>& shape) {
  static_assert(is_numeric_v<T>, "h5::File::create_preallocated_dataset: unsupported element type");
  for (auto d : shape)
    if (d < 0) throw Error(path_, display(dataset), "negative dimension in shape");
  Handle dcpl = make_plist(H5P_DATASET_CREATE);
  // Early allocation gives the dataset its extent now (late allocation would
  // place it at the first write through HDF5, which never comes); no fill, or
  // HDF5 would write the whole extent once before the ranks write it again.
  if (H5Pset_layout(dcpl.get(), H5D_CONTIGUOUS) < 0 || H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY) < 0 ||
      H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER) < 0)
    fail(path_, dataset, "cannot set the dataset's layout");
  Handle d = create_dataset_with(*this, file_type<T>(), dataset, shape, dcpl);
  if (H5Tequal(file_type<T>(), native_type<T>()) <= 0) return std::nullopt;
  const haddr_t offset = H5Dget_offset(d.get());
  if (offset == HADDR_UNDEF) return std::nullopt;  // an empty dataset has no extent
  // Push the metadata written so far to the file: a writer in another process
  // then finds the file as large as HDF5 left it, whatever it writes first.
  if (H5Fflush(id_, H5F_SCOPE_LOCAL) < 0) fail(path_, dataset, "cannot flush the file");
  const ssize_t length = H5Fget_name(id_, nullptr, 0);
  if (length < 0) fail(path_, dataset, "cannot read the file's name");
  std::string on_disk(static_cast<std::size_t>(length) + 1, '\0');
  H5Fget_name(id_, on_disk.data(), on_disk.size());
  on_disk.resize(static_cast<std::size_t>(length));
  // Absolute, so that a process in another working directory finds it too.
  return RawExtent{std::filesystem::absolute(on_disk).string(), static_cast<std::int64_t>(offset)};
}

template <class T>
void File::write_row_range(const std::string& dataset, std::int64_t row_begin, const T* data, std::size_t size) {
  static_assert(is_numeric_v<T>, "h5::File::write_row_range: unsupported element type");
  require_dataset(*this, dataset);
  Handle d = open_dataset(id_, path_, dataset);
  Handle space = dataset_space(d.get(), path_, dataset);
  const auto dims = space_dims(space.get(), path_, dataset);
  if (dims.empty()) throw Error(path_, display(dataset), "is a scalar, it has no rows");
  std::int64_t row_length = 1;
  for (std::size_t k = 1; k < dims.size(); ++k) row_length *= dims[k];
  if (size == 0) return;
  if (row_length == 0 || static_cast<std::int64_t>(size) % row_length != 0)
    throw Error(path_, display(dataset), "data is not a whole number of rows");
  const std::int64_t count_rows = static_cast<std::int64_t>(size) / row_length;
  if (row_begin < 0 || row_begin + count_rows > dims[0])
    throw Error(path_, display(dataset), "rows [" + std::to_string(row_begin) + ", " +
                                             std::to_string(row_begin + count_rows) +
                                             ") lie outside its " + std::to_string(dims[0]) + " rows");
  std::vector<hsize_t> start(dims.size(), 0), count(dims.begin(), dims.end());
  start[0] = static_cast<hsize_t>(row_begin);
  count[0] = static_cast<hsize_t>(count_rows);
  H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr);
  const hsize_t total = size;
  Handle mem(H5Screate_simple(1, &total, nullptr), H5Sclose);
  if (H5Dwrite(d.get(), native_type<T>(), mem.get(), space.get(), H5P_DEFAULT, data) < 0)
    fail(path_, dataset, "cannot write rows");
}

namespace {

void write_attribute(File& file, const std::string& object, const std::string& name, hid_t type,
                     hid_t space, const void* data, hid_t mem_type = -1) {
  const std::string element = display(object) + "@" + name;
  if (!file.exists(object)) throw Error(file.path(), display(object), "no such object");
  const char* where = object.empty() ? "/" : object.c_str();
  if (H5Aexists_by_name(file.id(), where, name.c_str(), H5P_DEFAULT) > 0 &&
      H5Adelete_by_name(file.id(), where, name.c_str(), H5P_DEFAULT) < 0)
    fail(file.path(), element, "cannot replace attribute");
  Handle acpl = make_plist(H5P_ATTRIBUTE_CREATE);
  H5Pset_char_encoding(acpl.get(), H5T_CSET_UTF8);
  Handle a = checked(H5Acreate_by_name(file.id(), where, name.c_str(), type, space, acpl.get(),
                                       H5P_DEFAULT, H5P_DEFAULT),
                     H5Aclose, file.path(), element, "cannot create attribute");
  if (data && H5Awrite(a.get(), mem_type >= 0 ? mem_type : type, data) < 0) fail(file.path(), element, "cannot write attribute");
}

}  // namespace

void File::write_string_attribute(const std::string& object, const std::string& name,
                                  const std::string& value) {
  Handle type = utf8_vlen_string_type();
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  const char* pointer = value.c_str();
  write_attribute(*this, object, name, type.get(), space.get(), &pointer);
}

void File::write_string_array_attribute(const std::string& object, const std::string& name,
                                        const std::vector<std::string>& values) {
  const hsize_t count = values.size();
  Handle space(H5Screate_simple(1, &count, nullptr), H5Sclose);
  if (values.empty()) {
    write_attribute(*this, object, name, H5T_IEEE_F64LE, space.get(), nullptr);
    return;
  }
  Handle type = utf8_vlen_string_type();
  std::vector<const char*> pointers(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) pointers[i] = values[i].c_str();
  write_attribute(*this, object, name, type.get(), space.get(), pointers.data());
}

template <class T>
void File::write_numeric_attribute(const std::string& object, const std::string& name,
                                   const std::vector<T>& values, bool scalar) {
  static_assert(is_numeric_v<T>, "h5::File::write_numeric_attribute: unsupported element type");
  if (scalar && values.size() != 1)
    throw Error(path_, display(object) + "@" + name, "a scalar attribute needs exactly one value");
  const hsize_t count = values.size();
  Handle space = scalar ? Handle(H5Screate(H5S_SCALAR), H5Sclose)
                        : Handle(H5Screate_simple(1, &count, nullptr), H5Sclose);
  write_attribute(*this, object, name, file_type<T>(), space.get(),
                  values.empty() ? nullptr : values.data(), native_type<T>());
}

void File::write_bool_attribute(const std::string& object, const std::string& name, bool value) {
  Handle type = bool_enum_type();
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  const std::int8_t stored = value ? 1 : 0;
  write_attribute(*this, object, name, type.get(), space.get(), &stored);
}

// ------------------------------------------------- explicit instantiations

#define KOTML_H5_INSTANTIATE(T)                                                                     \
  template std::vector<T> File::read<T>(const std::string&) const;                                 \
  template std::vector<T> File::read_range<T>(const std::string&, std::int64_t, std::int64_t) const; \
  template std::vector<T> File::read_ranges<T>(                                                     \
      const std::string&, const std::vector<std::pair<std::int64_t, std::int64_t>>&) const;         \
  template std::vector<T> File::read_rows<T>(const std::string&, const std::vector<std::int64_t>&) const; \
  template std::vector<T> File::read_row_range<T>(const std::string&, std::int64_t, std::int64_t) const; \
  template std::vector<T> File::read_numeric_attribute<T>(const std::string&, const std::string&) const; \
  template void File::write<T>(const std::string&, const std::vector<T>&,                          \
                               const std::vector<std::int64_t>&, int);                              \
  template void File::create_dataset<T>(const std::string&, const std::vector<std::int64_t>&, int); \
  template void File::write_row_range<T>(const std::string&, std::int64_t, const T*, std::size_t); \
  template std::optional<File::RawExtent> File::create_preallocated_dataset<T>(                     \
      const std::string&, const std::vector<std::int64_t>&);                                        \
  template void File::write_numeric_attribute<T>(const std::string&, const std::string&,           \
                                                 const std::vector<T>&, bool);

KOTML_H5_INSTANTIATE(float)
KOTML_H5_INSTANTIATE(double)
KOTML_H5_INSTANTIATE(std::int8_t)
KOTML_H5_INSTANTIATE(std::int16_t)
KOTML_H5_INSTANTIATE(std::int32_t)
KOTML_H5_INSTANTIATE(std::int64_t)
KOTML_H5_INSTANTIATE(std::uint8_t)
KOTML_H5_INSTANTIATE(std::uint16_t)
KOTML_H5_INSTANTIATE(std::uint32_t)
KOTML_H5_INSTANTIATE(std::uint64_t)

#undef KOTML_H5_INSTANTIATE

}  // namespace kotml::io::h5
