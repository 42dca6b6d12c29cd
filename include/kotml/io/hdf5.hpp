#pragma once
// A small RAII layer over the HDF5 C API, in the shape kotml needs it: whole
// datasets, 1-D ranges and selected rows read into std::vector with HDF5 doing
// the type conversion; strings of either storage; attributes; and writers whose
// output anndata/h5py read back.
//
// HDF5's own error printing is switched off. Every failure throws
// kotml::Error(file, element, reason), where element is the HDF5 path and the
// reason carries HDF5's most specific message, so a truncated or corrupt file
// reaches the user as one line naming what could not be read.
//
// Not thread-safe (neither is the serial HDF5 library): call from one host thread.
// Whole, range, ranges, row-range and rows reads of gzip-compressed chunked
// datasets use the rank's Kokkos host threads themselves, to inflate and to
// convert the stored type where it is not the one asked for
// (io/deflated_chunks.hpp, io/number_conversion.hpp); HDF5 stays on the calling
// thread.

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kotml {
class AtomicFile;
}

namespace kotml::io::h5 {

/// The element types read<T>/write<T> accept. HDF5 converts between any of them
/// and any integer or float type stored in a file.
template <class T>
inline constexpr bool is_numeric_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int8_t> ||
    std::is_same_v<T, std::int16_t> || std::is_same_v<T, std::int32_t> ||
    std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::uint8_t> ||
    std::is_same_v<T, std::uint16_t> || std::is_same_v<T, std::uint32_t> ||
    std::is_same_v<T, std::uint64_t>;

/// What a dataset or attribute holds, in numpy's words: "float32", "int16",
/// "uint8", "bool" (h5py's FALSE/TRUE enum), "enum<int8>" (other enums), "string"
/// (vlen or fixed), "reference", "compound", or "other".
struct TypeInfo {
  std::string dtype;
  bool is_string = false;
  bool is_variable_string = false;
  bool is_integer = false;   // plain integers (not enums or bools)
  bool is_float = false;
  bool is_bool = false;
  std::size_t size = 0;      // bytes per element in the file
};

class File {
 public:
  /// Opens an existing file read-only. Error when it is missing, not HDF5, or
  /// unreadable (truncated, damaged superblock). The first time a process opens
  /// a given file (path, size, mtime) it is first walked by verify_readable.
  static File open_read(const std::string& path);
  /// open_read without the verification walk, for files this process has just
  /// written or already verified.
  static File open_read_unverified(const std::string& path);
  /// Opens an HDF5 file image held in memory (HDF5's core driver, no backing
  /// file), read-only; `name` stands for the file in messages. HDF5 reads the
  /// bytes where they are (no copy), so they must outlive the File. Nothing
  /// verifies the image first: callers pass images HDF5 itself wrote (the
  /// fuzzers), not untrusted bytes.
  static File open_image(const std::string& name, const void* bytes, std::size_t size);
  /// Opens an existing file for reading and writing.
  static File open_rw(const std::string& path);
  /// Creates (truncates) a file. Outputs go through AtomicFile: pass its
  /// temporary_path() here and commit() after close().
  static File create(const std::string& path);
  /// Creates output's temporary; errors name output's target, the file the user
  /// asked for. commit() output after close().
  static File create(const AtomicFile& output);

  File(File&& other) noexcept;
  File& operator=(File&& other) noexcept;
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File();

  /// Flushes and closes now (also done by the destructor, which cannot report
  /// failures). Writers call this before AtomicFile::commit().
  void close();

  const std::string& path() const { return path_; }

  // ------------------------------------------------------------- structure
  /// True when every link along the path exists and resolves ("obs/cell_type/codes");
  /// "/" and "" are the root.
  bool exists(const std::string& object) const;
  bool is_group(const std::string& object) const;
  bool is_dataset(const std::string& object) const;
  /// Names (not paths) of a group's members, in creation order where the file
  /// tracks it, otherwise in name order (h5py's default).
  std::vector<std::string> children(const std::string& group) const;
  /// Dimensions of a dataset; empty for a scalar (0-D) dataset.
  std::vector<std::int64_t> shape(const std::string& dataset) const;
  /// Number of elements (1 for a scalar dataset).
  std::int64_t size(const std::string& dataset) const;
  TypeInfo type(const std::string& dataset) const;
  /// True when both paths reach one object (hard links to it).
  bool same_object(const std::string& a, const std::string& b) const;
  /// True when the dataset's chunks pass through a filter (gzip, shuffle, ...).
  bool is_compressed(const std::string& dataset) const;

  // ---------------------------------------------------------------- reading
  /// The whole dataset, flattened row-major. Integer, float and enum (bool)
  /// storage of any width converts to T.
  template <class T>
  std::vector<T> read(const std::string& dataset) const;
  /// Elements [begin, end) of a 1-D dataset, read as a hyperslab.
  template <class T>
  std::vector<T> read_range(const std::string& dataset, std::int64_t begin, std::int64_t end) const;
  /// Several ranges [first, second) of a 1-D dataset, concatenated in the order
  /// given; the dataset is opened once (sparse row slices, one per donor block).
  template <class T>
  std::vector<T> read_ranges(const std::string& dataset,
                             const std::vector<std::pair<std::int64_t, std::int64_t>>& ranges) const;
  /// Selected rows of a 2-D dataset, row-major, in the order given (repeats
  /// allowed). Neighbouring rows are read together; the rest is never read.
  template <class T>
  std::vector<T> read_rows(const std::string& dataset2d, const std::vector<std::int64_t>& rows) const;
  /// Rows [begin, end) of a 2-D dataset, row-major.
  template <class T>
  std::vector<T> read_row_range(const std::string& dataset2d, std::int64_t begin,
                                std::int64_t end) const;
  /// A string dataset (variable-length or fixed-length, ASCII or UTF-8), flattened.
  /// A scalar string dataset gives one element.
  std::vector<std::string> read_strings(const std::string& dataset) const;
  /// Elements [begin, end) of a 1-D string dataset.
  std::vector<std::string> read_strings_range(const std::string& dataset, std::int64_t begin,
                                              std::int64_t end) const;
  /// A scalar string dataset (anndata's "string" encoding in uns).
  std::string read_string(const std::string& dataset) const;

  // ------------------------------------------------------------- attributes
  bool has_attribute(const std::string& object, const std::string& name) const;
  std::vector<std::string> attribute_names(const std::string& object) const;
  TypeInfo attribute_type(const std::string& object, const std::string& name) const;
  /// A scalar string attribute, or a one-element string array.
  std::string read_string_attribute(const std::string& object, const std::string& name) const;
  /// A string-array attribute; an empty attribute of any type gives {} (h5py
  /// stores an empty column-order as an empty float64 array).
  std::vector<std::string> read_string_array_attribute(const std::string& object,
                                                       const std::string& name) const;
  /// A numeric (or bool enum) attribute, scalar or array, converted to T.
  template <class T>
  std::vector<T> read_numeric_attribute(const std::string& object, const std::string& name) const;
  /// The path of the object an object-reference attribute points to (anndata
  /// 0.7 links categorical codes to their categories this way).
  std::string read_reference_attribute(const std::string& object, const std::string& name) const;

  // ---------------------------------------------------------------- writing
  /// Creates a group and any missing parents; an existing group is kept.
  void create_group(const std::string& path);
  /// Removes a link (dataset or group) if present, so that it can be rewritten.
  void remove(const std::string& object);
  /// Copies `object` (a dataset, or a group with everything below it, with
  /// attributes) from source to the same path here, byte for byte: compressed
  /// chunks are copied as they are, never decoded. Creates missing parent groups.
  void copy_from(const File& source, const std::string& object);
  /// A second name, link, for the existing object `target` (an HDF5 hard link:
  /// both names reach the same bytes). Creates missing parent groups.
  void hard_link(const std::string& target, const std::string& link);
  /// Writes a dataset of shape `shape` (0-D when empty); data.size() must equal
  /// the product of shape. Replaces an existing dataset of that name. Parents
  /// are created. compression_level 1..9 stores it gzip-compressed in chunks.
  template <class T>
  void write(const std::string& dataset, const std::vector<T>& data,
             const std::vector<std::int64_t>& shape, int compression_level = 0);
  /// A 1-D dataset of data.size() elements.
  template <class T>
  void write(const std::string& dataset, const std::vector<T>& data) {
    write(dataset, data, {static_cast<std::int64_t>(data.size())});
  }
  /// Booleans (0 = false, anything else = true) in h5py's bool enum, which
  /// numpy/anndata read back as dtype bool.
  void write_bools(const std::string& dataset, const std::vector<std::uint8_t>& values,
                   const std::vector<std::int64_t>& shape);
  /// A 1-D dataset of variable-length UTF-8 strings (h5py's str dtype).
  void write_strings(const std::string& dataset, const std::vector<std::string>& values);
  /// A scalar variable-length UTF-8 string dataset.
  void write_string(const std::string& dataset, const std::string& value);

  /// Creates an uninitialised dataset of T with the given shape, to be filled
  /// piecewise with write_row_range (outputs too large to hold at once).
  template <class T>
  void create_dataset(const std::string& dataset, const std::vector<std::int64_t>& shape,
                      int compression_level = 0);
  /// A dataset of T whose bytes other processes write in place, at the same
  /// time, each its own rows (kotml apsp: every rank writes its rows of a
  /// matrix larger than any one rank could gather). It is contiguous and
  /// uncompressed, its file space is allocated now and never filled, and the
  /// HDF5 library does not touch that space again. The result names the file as
  /// it is on disk (an AtomicFile's temporary, not its target) and the byte
  /// offset of element 0; element e lies at offset + e·sizeof(T), row-major.
  /// No result (nullopt) where the raw bytes would not be the file's: a host
  /// whose T is not the file's little-endian type. The dataset then exists all
  /// the same and write_row_range fills it.
  struct RawExtent {
    std::string file;
    std::int64_t offset = 0;
  };
  template <class T>
  std::optional<RawExtent> create_preallocated_dataset(const std::string& dataset,
                                                       const std::vector<std::int64_t>& shape);
  /// Writes rows [row_begin, row_begin + data.size()/row_length) of an N-D
  /// dataset created by create_dataset (row = everything after the first axis).
  template <class T>
  void write_row_range(const std::string& dataset, std::int64_t row_begin, const T* data, std::size_t size);
  template <class T>
  void write_row_range(const std::string& dataset, std::int64_t row_begin, const std::vector<T>& data) {
    write_row_range<T>(dataset, row_begin, data.data(), data.size());
  }

  /// Attribute writers replace an attribute of the same name. object "/" is the root.
  void write_string_attribute(const std::string& object, const std::string& name,
                              const std::string& value);
  /// An array of variable-length UTF-8 strings. An empty list is written as an
  /// empty float64 array, exactly as h5py writes anndata's empty column-order.
  void write_string_array_attribute(const std::string& object, const std::string& name,
                                    const std::vector<std::string>& values);
  /// A 1-D numeric attribute (a scalar one when scalar is true and values has
  /// one element).
  template <class T>
  void write_numeric_attribute(const std::string& object, const std::string& name,
                               const std::vector<T>& values, bool scalar = false);
  /// A scalar h5py-compatible boolean (categorical 'ordered').
  void write_bool_attribute(const std::string& object, const std::string& name, bool value);

  /// The raw HDF5 file id, for code that needs an API this class lacks.
  std::int64_t id() const { return id_; }

 private:
  File(std::int64_t id, std::string path) : id_(id), path_(std::move(path)) {}
  std::int64_t id_ = -1;
  std::string path_;
};

/// Walks every object, attribute, string and chunk index of an HDF5 file in a
/// child process, so that the damage the HDF5 library does not survive (on a
/// corrupt file HDF5 1.10 can crash or loop forever) becomes an Error naming
/// the element being read, instead of killing or hanging this process.
/// Failures HDF5 reports normally are left for the real read to report.
/// The child has KOTML_H5_VERIFY_TIMEOUT seconds (default 60) without progress
/// before it is stopped. KOTML_H5_VERIFY=0 turns the walk off. A walk that
/// start_verification began for the same file (device, inode, size, mtime) is
/// waited for instead of starting another.
void verify_readable(const std::string& path);

/// Begins the verification walk of every candidate that names an HDF5 file, each
/// in its own child process, and returns at once: kotml's main passes its
/// arguments here before MPI_Init, so that the walks run while MPI and Kokkos
/// start (about 35 ms of a 5,000-cell .h5ad, otherwise spent waiting in
/// verify_readable). Before MPI_Init the process has one thread, which is also
/// when fork() is safest. A candidate may be "--option=path"; anything that is
/// not an existing HDF5 file is ignored, and at most 8 walks are started.
void start_verification(const std::vector<std::string>& candidates);

/// Stops and reaps the walks start_verification began that no verify_readable
/// waited for (an argument that was an output, or a run that ended early).
void cancel_pending_verification();

/// Walks begun by start_verification and not yet waited for or cancelled.
std::size_t pending_verifications();

/// True when the file at path starts with the HDF5 signature (at offset 0 or a
/// power-of-two user block), without asking the HDF5 library.
bool has_hdf5_signature(const std::string& path);

}  // namespace kotml::io::h5
