#include "h5_image_mutator.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace kotml::fuzz {
namespace {

using Rng = std::mt19937_64;

/// An HDF5 identifier closed on scope exit.
class Id {
 public:
  Id() = default;
  Id(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Id(Id&& other) noexcept : id_(std::exchange(other.id_, -1)), close_(other.close_) {}
  Id& operator=(Id&& other) noexcept {
    std::swap(id_, other.id_);
    std::swap(close_, other.close_);
    return *this;
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  ~Id() {
    if (id_ >= 0 && close_) close_(id_);
  }
  hid_t get() const { return id_; }
  explicit operator bool() const { return id_ >= 0; }

 private:
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

std::size_t pick(Rng& rng, std::size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); }
bool coin(Rng& rng, int one_in) { return pick(rng, static_cast<std::size_t>(one_in)) == 0; }

/// A unique name per image: the core driver identifies open files by name.
std::string image_name(const char* what) {
  static unsigned long counter = 0;
  return std::string("kotml-fuzz-") + what + "-" + std::to_string(++counter) + ".h5";
}

Id image_access() {
  Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_fapl_core(fapl.get(), 1 << 16, /*backing_store=*/false);
  // Closing the file closes whatever a failed mutation left open.
  H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG);
  return fapl;
}

Id open_image(const std::uint8_t* data, std::size_t size) {
  Id fapl = image_access();
  if (H5Pset_file_image(fapl.get(), const_cast<std::uint8_t*>(data), size) < 0) return {};
  return Id(H5Fopen(image_name("in").c_str(), H5F_ACC_RDWR, fapl.get()), H5Fclose);
}

Id create_image() {
  Id fapl = image_access();
  Id fcpl(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
  H5Pset_link_creation_order(fcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  return Id(H5Fcreate(image_name("new").c_str(), H5F_ACC_TRUNC, fcpl.get(), fapl.get()), H5Fclose);
}

/// The image of an open file, or empty when it would pass max_size.
std::vector<std::uint8_t> image_of(hid_t file, std::size_t max_size) {
  H5Fflush(file, H5F_SCOPE_GLOBAL);
  const ssize_t size = H5Fget_file_image(file, nullptr, 0);
  if (size <= 0 || static_cast<std::size_t>(size) > max_size) return {};
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  if (H5Fget_file_image(file, bytes.data(), bytes.size()) != size) return {};
  return bytes;
}

// ------------------------------------------------------------- the file's parts

struct Object {
  std::string path;
  bool is_group = false;
};

struct Attribute {
  std::string object, name;
};

struct Inventory {
  std::vector<Object> objects;        // "/" first
  std::vector<Attribute> attributes;  // of every object
  std::vector<std::string> names;     // every link name, to reuse as values
};

herr_t collect_attribute(hid_t, const char* name, const H5A_info_t*, void* data) {
  auto* pair = static_cast<std::pair<Inventory*, std::string>*>(data);
  pair->first->attributes.push_back({pair->second, name});
  return 0;
}

void collect_attributes(hid_t file, const std::string& path, Inventory& inventory) {
  Id object(H5Oopen(file, path.c_str(), H5P_DEFAULT), H5Oclose);
  if (!object) return;
  std::pair<Inventory*, std::string> data{&inventory, path};
  hsize_t index = 0;
  H5Aiterate2(object.get(), H5_INDEX_NAME, H5_ITER_INC, &index, collect_attribute, &data);
}

herr_t collect_link(hid_t group, const char* name, const H5L_info_t* info, void* data) {
  auto& inventory = *static_cast<Inventory*>(data);
  if (info->type != H5L_TYPE_HARD) return 0;
  Id object(H5Oopen(group, name, H5P_DEFAULT), H5Oclose);
  if (!object) return 0;
  const H5I_type_t kind = H5Iget_type(object.get());
  if (kind != H5I_GROUP && kind != H5I_DATASET) return 0;
  inventory.objects.push_back({std::string("/") + name, kind == H5I_GROUP});
  const std::string full(name);
  inventory.names.push_back(full.substr(full.rfind('/') + 1));
  return 0;
}

Inventory inventory_of(hid_t file) {
  Inventory inventory;
  inventory.objects.push_back({"/", true});
  H5Lvisit(file, H5_INDEX_NAME, H5_ITER_INC, collect_link, &inventory);
  for (std::size_t k = 0; k < inventory.objects.size(); ++k)
    collect_attributes(file, inventory.objects[k].path, inventory);
  return inventory;
}

std::string parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string& path) { return path.substr(path.rfind('/') + 1); }

std::string join(const std::string& group, const std::string& name) {
  return group == "/" ? "/" + name : group + "/" + name;
}

// ------------------------------------------------------------------- values

/// What a wrong writer puts into AnnData: its vocabulary in the wrong places,
/// empty and non-UTF-8 text, pandas' spellings of missing values.
std::string interesting_string(Rng& rng, const Inventory& inventory) {
  static const char* vocabulary[] = {
      "anndata", "dataframe", "csr_matrix", "csc_matrix", "array", "categorical", "string-array",
      "nullable-integer", "nullable-boolean", "nullable-string-array", "dict", "string", "numeric-scalar",
      "awkward-array", "raw", "0.1.0", "0.2.0", "0.0.0", "_index", "index", "X", "obs", "var", "codes",
      "categories", "mask", "values", "data", "indices", "indptr", "", "nan", "NaN", "None", "True", "-1",
      "0", "1e308", "\xff\xfe\xfd", "a/b", ".", "..", " "};
  const std::size_t choice = pick(rng, 4);
  if (choice == 0 && !inventory.names.empty()) return inventory.names[pick(rng, inventory.names.size())];
  if (choice == 1) return std::string(1 + pick(rng, 400), static_cast<char>('a' + pick(rng, 26)));
  return vocabulary[pick(rng, sizeof vocabulary / sizeof *vocabulary)];
}

std::int64_t interesting_integer(Rng& rng, std::int64_t n) {
  switch (pick(rng, 14)) {
    case 0: return 0;
    case 1: return -1;
    case 2: return 1;
    case 3: return n;
    case 4: return n == std::numeric_limits<std::int64_t>::min() ? n : n - 1;
    case 5: return n == std::numeric_limits<std::int64_t>::max() ? n : n + 1;
    case 6: return std::numeric_limits<std::int32_t>::max();
    case 7: return std::numeric_limits<std::int32_t>::min();
    case 8: return std::numeric_limits<std::int64_t>::max();
    case 9: return std::numeric_limits<std::int64_t>::min();
    case 10: return std::int64_t(1) << 40;
    case 11: return -2;
    default: return static_cast<std::int64_t>(pick(rng, 64)) - 8;
  }
}

double interesting_double(Rng& rng) {
  switch (pick(rng, 16)) {
    case 0: return 0.0;
    case 1: return -0.0;
    case 2: return std::numeric_limits<double>::quiet_NaN();
    case 3: return std::numeric_limits<double>::infinity();
    case 4: return -std::numeric_limits<double>::infinity();
    case 5: return 1e308;
    case 6: return -1e308;
    case 7: return 5e-324;
    case 8: return 1e-300;
    case 9: return 1e40;
    case 10: return -1.0;
    case 11: return 0.5;
    case 12: return 1e5;
    default: return std::uniform_real_distribution<double>(-10, 10)(rng);
  }
}

/// A variable-length string type of the given character set.
Id vlen_string_type(H5T_cset_t cset = H5T_CSET_UTF8) {
  Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), cset);
  return type;
}

bool is_vlen_string(hid_t type) { return H5Tget_class(type) == H5T_STRING && H5Tis_variable_str(type) > 0; }

std::vector<std::string> read_vlen_strings(hid_t object, hid_t file_type, bool attribute) {
  Id space(attribute ? H5Aget_space(object) : H5Dget_space(object), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n < 0) return {};
  Id memory = vlen_string_type(H5Tget_cset(file_type));
  std::vector<char*> raw(static_cast<std::size_t>(n), nullptr);
  const herr_t status = attribute ? H5Aread(object, memory.get(), raw.data())
                                  : H5Dread(object, memory.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, raw.data());
  std::vector<std::string> strings;
  if (status >= 0)
    for (char* s : raw) strings.emplace_back(s ? s : "");
  if (status >= 0 && n > 0) H5Dvlen_reclaim(memory.get(), space.get(), H5P_DEFAULT, raw.data());
  return strings;
}

std::vector<const char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<const char*> pointers;
  for (const auto& s : strings) pointers.push_back(s.c_str());
  return pointers;
}

// --------------------------------------------------------------- attributes

/// An attribute read whole, with its own type, so it can be written elsewhere.
struct AttributeCopy {
  std::string name;
  Id type, space;
  std::vector<unsigned char> bytes;
  bool holds_vlen_memory = false;  // strings HDF5 allocated, freed here

  AttributeCopy() = default;
  AttributeCopy(AttributeCopy&& other) noexcept
      : name(std::move(other.name)),
        type(std::move(other.type)),
        space(std::move(other.space)),
        bytes(std::move(other.bytes)),
        holds_vlen_memory(std::exchange(other.holds_vlen_memory, false)) {}
  AttributeCopy& operator=(AttributeCopy&&) = delete;
  ~AttributeCopy() {
    if (holds_vlen_memory) H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, bytes.data());
  }
};

std::vector<AttributeCopy> read_attributes(hid_t object) {
  std::vector<AttributeCopy> copies;
  const int count = H5Aget_num_attrs(object);
  for (int k = 0; k < count; ++k) {
    Id attribute(H5Aopen_by_idx(object, ".", H5_INDEX_NAME, H5_ITER_INC, static_cast<hsize_t>(k), H5P_DEFAULT,
                                H5P_DEFAULT),
                 H5Aclose);
    if (!attribute) continue;
    AttributeCopy copy;
    char name[1024] = {};
    if (H5Aget_name(attribute.get(), sizeof name, name) < 0) continue;
    copy.name = name;
    copy.type = Id(H5Aget_type(attribute.get()), H5Tclose);
    copy.space = Id(H5Aget_space(attribute.get()), H5Sclose);
    const hssize_t n = H5Sget_simple_extent_npoints(copy.space.get());
    if (n < 0) continue;
    copy.bytes.resize(static_cast<std::size_t>(n) * H5Tget_size(copy.type.get()) + 1);
    if (H5Aread(attribute.get(), copy.type.get(), copy.bytes.data()) < 0) continue;
    copy.holds_vlen_memory =
        H5Tdetect_class(copy.type.get(), H5T_VLEN) > 0 || H5Tdetect_class(copy.type.get(), H5T_STRING) > 0;
    copies.push_back(std::move(copy));
  }
  return copies;
}

void write_attributes(hid_t object, std::vector<AttributeCopy>& copies) {
  for (auto& copy : copies) {
    Id attribute(H5Acreate2(object, copy.name.c_str(), copy.type.get(), copy.space.get(), H5P_DEFAULT, H5P_DEFAULT),
                 H5Aclose);
    if (attribute) H5Awrite(attribute.get(), copy.type.get(), copy.bytes.data());
  }
}

void replace_attribute(hid_t object, const char* name, hid_t type, hid_t space, const void* values) {
  if (H5Aexists(object, name) > 0) H5Adelete(object, name);
  Id attribute(H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (attribute) H5Awrite(attribute.get(), type, values);
}

void set_string_attribute(hid_t file, Rng& rng, const Inventory& inventory) {
  static const char* names[] = {"encoding-type", "encoding-version", "_index", "column-order", "categories",
                                "ordered", "shape", "h5sparse_format", "h5sparse_shape"};
  std::string object_path, name;
  if (!inventory.attributes.empty() && !coin(rng, 3)) {
    const auto& a = inventory.attributes[pick(rng, inventory.attributes.size())];
    object_path = a.object;
    name = a.name;
  } else {
    object_path = inventory.objects[pick(rng, inventory.objects.size())].path;
    name = names[pick(rng, sizeof names / sizeof *names)];
  }
  Id object(H5Oopen(file, object_path.c_str(), H5P_DEFAULT), H5Oclose);
  if (!object) return;
  std::vector<std::string> values;
  bool array = false;
  if (H5Aexists(object.get(), name.c_str()) > 0) {
    Id attribute(H5Aopen(object.get(), name.c_str(), H5P_DEFAULT), H5Aclose);
    Id type(H5Aget_type(attribute.get()), H5Tclose);
    Id space(H5Aget_space(attribute.get()), H5Sclose);
    array = H5Sget_simple_extent_ndims(space.get()) > 0;
    if (is_vlen_string(type.get())) values = read_vlen_strings(attribute.get(), type.get(), true);
  }
  if (array && !values.empty()) {
    // A list (column-order): lose, repeat, add, or reorder an entry.
    switch (pick(rng, 4)) {
      case 0: values.erase(values.begin() + static_cast<std::ptrdiff_t>(pick(rng, values.size()))); break;
      case 1: values.push_back(values[pick(rng, values.size())]); break;
      case 2: values.push_back(interesting_string(rng, inventory)); break;
      default: std::reverse(values.begin(), values.end()); break;
    }
  } else {
    values = {interesting_string(rng, inventory)};
  }
  Id type = vlen_string_type();
  const hsize_t n = values.size();
  Id space(array ? H5Screate_simple(1, &n, nullptr) : H5Screate(H5S_SCALAR), H5Sclose);
  if (!array) values.resize(1);
  const auto pointers = c_strings(values);
  replace_attribute(object.get(), name.c_str(), type.get(), space.get(), pointers.data());
}

void set_numeric_attribute(hid_t file, Rng& rng, const Inventory& inventory) {
  std::vector<const Attribute*> numeric;
  for (const auto& a : inventory.attributes) {
    Id attribute(H5Aopen_by_name(file, a.object.c_str(), a.name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (!attribute) continue;
    Id type(H5Aget_type(attribute.get()), H5Tclose);
    const H5T_class_t kind = H5Tget_class(type.get());
    if (kind == H5T_INTEGER || kind == H5T_FLOAT || kind == H5T_ENUM) numeric.push_back(&a);
  }
  if (numeric.empty()) return;
  const Attribute& a = *numeric[pick(rng, numeric.size())];
  Id object(H5Oopen(file, a.object.c_str(), H5P_DEFAULT), H5Oclose);
  Id attribute(H5Aopen(object.get(), a.name.c_str(), H5P_DEFAULT), H5Aclose);
  Id type(H5Aget_type(attribute.get()), H5Tclose);
  Id space(H5Aget_space(attribute.get()), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n <= 0) return;
  const std::size_t width = H5Tget_size(type.get());
  std::vector<unsigned char> bytes(static_cast<std::size_t>(n) * width);
  if (H5Aread(attribute.get(), type.get(), bytes.data()) < 0) return;
  const std::size_t at = pick(rng, static_cast<std::size_t>(n));
  if (H5Tget_class(type.get()) == H5T_ENUM || coin(rng, 4)) {
    std::memset(bytes.data() + at * width, static_cast<int>(pick(rng, 256)), width);
    H5Awrite(attribute.get(), type.get(), bytes.data());
    return;
  }
  std::vector<long long> values(static_cast<std::size_t>(n));
  if (H5Aread(attribute.get(), H5T_NATIVE_LLONG, values.data()) < 0) return;
  values[at] = interesting_integer(rng, values[at]);
  H5Awrite(attribute.get(), H5T_NATIVE_LLONG, values.data());
}

// ----------------------------------------------------------------- datasets

std::vector<std::string> datasets_of(const Inventory& inventory) {
  std::vector<std::string> paths;
  for (const auto& o : inventory.objects)
    if (!o.is_group) paths.push_back(o.path);
  return paths;
}

/// Overwrites one to three elements: numbers with edge values, strings with
/// the vocabulary, anything fixed-size (enums, bools) with a repeated byte.
void set_values(hid_t file, Rng& rng, const std::string& path, const Inventory& inventory) {
  Id dataset(H5Dopen2(file, path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!dataset) return;
  Id type(H5Dget_type(dataset.get()), H5Tclose);
  Id space(H5Dget_space(dataset.get()), H5Sclose);
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  if (count <= 0 || count > (1 << 22)) return;
  const auto n = static_cast<std::size_t>(count);
  const std::size_t edits = 1 + pick(rng, 3);
  const H5T_class_t kind = H5Tget_class(type.get());
  if (is_vlen_string(type.get())) {
    auto strings = read_vlen_strings(dataset.get(), type.get(), false);
    if (strings.size() != n) return;
    for (std::size_t e = 0; e < edits; ++e)
      strings[pick(rng, n)] = coin(rng, 3) ? strings[pick(rng, n)] : interesting_string(rng, inventory);
    Id memory = vlen_string_type(H5Tget_cset(type.get()));
    const auto pointers = c_strings(strings);
    H5Dwrite(dataset.get(), memory.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data());
    return;
  }
  if ((kind == H5T_INTEGER || kind == H5T_FLOAT) && !coin(rng, 5)) {
    if (kind == H5T_INTEGER) {
      std::vector<long long> values(n);
      if (H5Dread(dataset.get(), H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0) return;
      for (std::size_t e = 0; e < edits; ++e) {
        const std::size_t at = coin(rng, 4) ? n - 1 : pick(rng, n);
        if (coin(rng, 3) && n > 1)
          std::swap(values[at], values[pick(rng, n)]);  // unsorted indices, decreasing indptr
        else
          values[at] = interesting_integer(rng, coin(rng, 2) ? values[at] : static_cast<long long>(n));
      }
      H5Dwrite(dataset.get(), H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
    } else {
      std::vector<double> values(n);
      if (H5Dread(dataset.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0) return;
      for (std::size_t e = 0; e < edits; ++e) values[pick(rng, n)] = interesting_double(rng);
      H5Dwrite(dataset.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
    }
    return;
  }
  if (kind == H5T_REFERENCE || H5Tdetect_class(type.get(), H5T_VLEN) > 0 ||
      H5Tdetect_class(type.get(), H5T_REFERENCE) > 0)
    return;
  const std::size_t width = H5Tget_size(type.get());
  std::vector<unsigned char> bytes(n * width);
  if (H5Dread(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()) < 0) return;
  for (std::size_t e = 0; e < edits; ++e)
    std::memset(bytes.data() + pick(rng, n) * width, static_cast<int>(pick(rng, 256)), width);
  H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data());
}

/// A dataset's values in a form that can be written with another shape or type.
struct DatasetCopy {
  Id type;                           // the file type
  std::vector<hsize_t> dims;         // empty: scalar
  std::vector<std::string> strings;  // variable-length strings
  std::vector<double> numbers;       // integers and floats
  std::vector<unsigned char> bytes;  // other fixed-size types, raw
  bool is_string = false, is_number = false;
  std::vector<AttributeCopy> attributes;
};

bool read_dataset(hid_t file, const std::string& path, DatasetCopy& copy) {
  Id dataset(H5Dopen2(file, path.c_str(), H5P_DEFAULT), H5Dclose);
  if (!dataset) return false;
  copy.type = Id(H5Dget_type(dataset.get()), H5Tclose);
  Id space(H5Dget_space(dataset.get()), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0 || rank > 8) return false;
  copy.dims.resize(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), copy.dims.data(), nullptr);
  const hssize_t count = H5Sget_simple_extent_npoints(space.get());
  if (count < 0 || count > (1 << 22)) return false;
  const H5T_class_t kind = H5Tget_class(copy.type.get());
  if (is_vlen_string(copy.type.get())) {
    copy.is_string = true;
    copy.strings = read_vlen_strings(dataset.get(), copy.type.get(), false);
    if (copy.strings.size() != static_cast<std::size_t>(count)) return false;
  } else if (kind == H5T_INTEGER || kind == H5T_FLOAT) {
    copy.is_number = true;
    copy.numbers.resize(static_cast<std::size_t>(count));
    if (count > 0 &&
        H5Dread(dataset.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, copy.numbers.data()) < 0)
      return false;
  } else {
    if (H5Tdetect_class(copy.type.get(), H5T_VLEN) > 0 || H5Tdetect_class(copy.type.get(), H5T_REFERENCE) > 0)
      return false;
    copy.bytes.resize(static_cast<std::size_t>(count) * H5Tget_size(copy.type.get()));
    if (count > 0 && H5Dread(dataset.get(), copy.type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, copy.bytes.data()) < 0)
      return false;
  }
  copy.attributes = read_attributes(dataset.get());
  return true;
}

/// Replaces the dataset at path by copy (its type, dims and values), keeping
/// the attributes.
void write_dataset(hid_t file, const std::string& path, DatasetCopy& copy) {
  std::size_t count = 1;
  for (hsize_t d : copy.dims) count *= static_cast<std::size_t>(d);
  if (H5Ldelete(file, path.c_str(), H5P_DEFAULT) < 0) return;
  Id space(copy.dims.empty() ? H5Screate(H5S_SCALAR)
                             : H5Screate_simple(static_cast<int>(copy.dims.size()), copy.dims.data(), nullptr),
           H5Sclose);
  Id dataset(H5Dcreate2(file, path.c_str(), copy.type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
             H5Dclose);
  if (!dataset) return;
  if (count > 0) {
    if (copy.is_string) {
      copy.strings.resize(count);
      const auto pointers = c_strings(copy.strings);
      Id memory = vlen_string_type(H5Tget_cset(copy.type.get()));
      H5Dwrite(dataset.get(), memory.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data());
    } else if (copy.is_number) {
      copy.numbers.resize(count, copy.numbers.empty() ? 0.0 : copy.numbers.back());
      H5Dwrite(dataset.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, copy.numbers.data());
    } else {
      copy.bytes.resize(count * H5Tget_size(copy.type.get()));
      H5Dwrite(dataset.get(), copy.type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, copy.bytes.data());
    }
  }
  write_attributes(dataset.get(), copy.attributes);
}

/// Another length along the first axis (or a scalar becomes 1-D, and back).
void resize(hid_t file, Rng& rng, const std::string& path) {
  DatasetCopy copy;
  if (!read_dataset(file, path, copy)) return;
  if (copy.dims.empty()) {
    copy.dims = {static_cast<hsize_t>(pick(rng, 3))};
  } else if (copy.dims.size() == 1 && coin(rng, 8)) {
    copy.dims.clear();
  } else {
    const hsize_t n = copy.dims[0];
    const hsize_t choices[] = {0, 1, n > 0 ? n - 1 : 0, n + 1, 2 * n + 1, n / 2};
    copy.dims[0] = choices[pick(rng, 6)];
  }
  write_dataset(file, path, copy);
}

/// Another storage type: integer widths and signs, floats, strings, h5py's bool.
void retype(hid_t file, Rng& rng, const std::string& path) {
  DatasetCopy copy;
  if (!read_dataset(file, path, copy) || !(copy.is_number || copy.is_string)) return;
  if (copy.is_string) {
    copy.is_string = false;
    copy.is_number = true;
    for (const auto& s : copy.strings) copy.numbers.push_back(std::strtod(s.c_str(), nullptr));
    copy.strings.clear();
  }
  const hid_t numeric[] = {H5T_STD_I8LE,  H5T_STD_I16LE, H5T_STD_I32LE, H5T_STD_I64LE,   H5T_STD_U8LE,
                           H5T_STD_U32LE, H5T_STD_U64LE, H5T_IEEE_F32LE, H5T_IEEE_F64LE, H5T_STD_I32BE};
  const std::size_t choice = pick(rng, 12);
  if (choice < 10) {
    copy.type = Id(H5Tcopy(numeric[choice]), H5Tclose);
  } else if (choice == 10) {
    copy.type = vlen_string_type();
    copy.is_number = false;
    copy.is_string = true;
    for (double v : copy.numbers) {
      char text[32];
      std::snprintf(text, sizeof text, "%.17g", v);
      copy.strings.emplace_back(text);
    }
    copy.numbers.clear();
  } else {
    // h5py's bool: an int8 enum of FALSE = 0 and TRUE = 1.
    copy.type = Id(H5Tenum_create(H5T_NATIVE_SCHAR), H5Tclose);
    signed char no = 0, yes = 1;
    H5Tenum_insert(copy.type.get(), "FALSE", &no);
    H5Tenum_insert(copy.type.get(), "TRUE", &yes);
    copy.is_number = false;
    for (double v : copy.numbers) copy.bytes.push_back(v != 0 ? 1 : 0);
    copy.numbers.clear();
  }
  write_dataset(file, path, copy);
}

// -------------------------------------------------------------------- links

void swap_links(hid_t file, Rng& rng, const Inventory& inventory) {
  if (inventory.objects.size() < 3) return;
  const auto& a = inventory.objects[1 + pick(rng, inventory.objects.size() - 1)];
  // Prefer a sibling: indptr for indices, one column for another.
  std::vector<const Object*> siblings;
  for (const auto& o : inventory.objects)
    if (o.path != a.path && o.path != "/" && parent_of(o.path) == parent_of(a.path)) siblings.push_back(&o);
  const Object* b = siblings.empty() ? &inventory.objects[1 + pick(rng, inventory.objects.size() - 1)]
                                     : siblings[pick(rng, siblings.size())];
  if (b->path == a.path || a.path.rfind(b->path + "/", 0) == 0 || b->path.rfind(a.path + "/", 0) == 0) return;
  const std::string temporary = "/kotml-fuzz-swap";
  if (H5Lmove(file, a.path.c_str(), file, temporary.c_str(), H5P_DEFAULT, H5P_DEFAULT) < 0) return;
  if (H5Lmove(file, b->path.c_str(), file, a.path.c_str(), H5P_DEFAULT, H5P_DEFAULT) < 0) return;
  H5Lmove(file, temporary.c_str(), file, b->path.c_str(), H5P_DEFAULT, H5P_DEFAULT);
}

/// Copies an object into another group, under its own name or a vocabulary one.
void copy_object(hid_t file, Rng& rng, const Inventory& inventory) {
  if (inventory.objects.size() < 2) return;
  const auto& source = inventory.objects[1 + pick(rng, inventory.objects.size() - 1)];
  std::vector<const Object*> groups;
  for (const auto& o : inventory.objects)
    if (o.is_group && o.path.rfind(source.path + "/", 0) != 0 && o.path != source.path) groups.push_back(&o);
  if (groups.empty()) return;
  const std::string target_group = groups[pick(rng, groups.size())]->path;
  std::string name = coin(rng, 2) ? base_of(source.path) : interesting_string(rng, inventory);
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") name = "copy";
  const std::string target = join(target_group, name);
  if (H5Lexists(file, target.c_str(), H5P_DEFAULT) > 0) H5Ldelete(file, target.c_str(), H5P_DEFAULT);
  H5Ocopy(file, source.path.c_str(), file, target.c_str(), H5P_DEFAULT, H5P_DEFAULT);
}

/// A dataset where a group belongs, or a group where a dataset does.
void change_kind(hid_t file, Rng& rng, const Inventory& inventory) {
  if (inventory.objects.size() < 2) return;
  const auto& victim = inventory.objects[1 + pick(rng, inventory.objects.size() - 1)];
  if (H5Ldelete(file, victim.path.c_str(), H5P_DEFAULT) < 0) return;
  if (victim.is_group) {
    const hsize_t n = pick(rng, 4);
    Id space(H5Screate_simple(1, &n, nullptr), H5Sclose);
    Id dataset(H5Dcreate2(file, victim.path.c_str(), H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                          H5P_DEFAULT),
               H5Dclose);
  } else {
    Id group(H5Gcreate2(file, victim.path.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  }
}

void delete_link(hid_t file, Rng& rng, const Inventory& inventory) {
  if (inventory.objects.size() < 2) return;
  H5Ldelete(file, inventory.objects[1 + pick(rng, inventory.objects.size() - 1)].path.c_str(), H5P_DEFAULT);
}

void delete_attribute(hid_t file, Rng& rng, const Inventory& inventory) {
  if (inventory.attributes.empty()) return;
  const auto& a = inventory.attributes[pick(rng, inventory.attributes.size())];
  H5Adelete_by_name(file, a.object.c_str(), a.name.c_str(), H5P_DEFAULT);
}

void mutate_once(hid_t file, Rng& rng) {
  const Inventory inventory = inventory_of(file);
  const auto datasets = datasets_of(inventory);
  const std::string dataset = datasets.empty() ? std::string() : datasets[pick(rng, datasets.size())];
  switch (pick(rng, 12)) {
    case 0:
    case 1:
    case 2:
      if (!dataset.empty()) set_values(file, rng, dataset, inventory);
      break;
    case 3:
      if (!dataset.empty()) resize(file, rng, dataset);
      break;
    case 4:
      if (!dataset.empty()) retype(file, rng, dataset);
      break;
    case 5:
    case 6: set_string_attribute(file, rng, inventory); break;
    case 7: set_numeric_attribute(file, rng, inventory); break;
    case 8: delete_attribute(file, rng, inventory); break;
    case 9: delete_link(file, rng, inventory); break;
    case 10: rng() % 2 ? swap_links(file, rng, inventory) : copy_object(file, rng, inventory); break;
    default: change_kind(file, rng, inventory); break;
  }
}

/// Copies every root member and root attribute into a fresh image, which drops
/// the space that deleted and rewritten objects left behind.
std::vector<std::uint8_t> repacked(hid_t file, std::size_t max_size) {
  Id fresh = create_image();
  if (!fresh) return {};
  Id copy_plist(H5Pcreate(H5P_OBJECT_COPY), H5Pclose);
  H5Pset_copy_object(copy_plist.get(), H5O_COPY_EXPAND_REFERENCE_FLAG);
  Id root(H5Gopen2(file, "/", H5P_DEFAULT), H5Gclose);
  H5G_info_t info;
  if (H5Gget_info(root.get(), &info) < 0) return {};
  for (hsize_t k = 0; k < info.nlinks; ++k) {
    char name[1024] = {};
    if (H5Lget_name_by_idx(root.get(), ".", H5_INDEX_NAME, H5_ITER_INC, k, name, sizeof name, H5P_DEFAULT) < 0)
      continue;
    H5Ocopy(root.get(), name, fresh.get(), name, copy_plist.get(), H5P_DEFAULT);
  }
  auto attributes = read_attributes(root.get());
  Id fresh_root(H5Gopen2(fresh.get(), "/", H5P_DEFAULT), H5Gclose);
  write_attributes(fresh_root.get(), attributes);
  return image_of(fresh.get(), max_size);
}

std::size_t store(std::uint8_t* data, const std::vector<std::uint8_t>& image) {
  std::memcpy(data, image.data(), image.size());
  return image.size();
}

}  // namespace

std::size_t mutate_h5_image(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned seed) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  Rng rng(seed);
  Id file = size > 0 ? open_image(data, size) : Id();
  if (!file) {
    Id fresh = create_image();
    for (const char* frame : {"/obs", "/var"}) Id group(H5Gcreate2(fresh.get(), frame, H5P_DEFAULT, H5P_DEFAULT,
                                                                   H5P_DEFAULT), H5Gclose);
    const auto image = image_of(fresh.get(), max_size);
    return image.empty() ? size : store(data, image);
  }
  const std::size_t mutations = 1 + (coin(rng, 3) ? pick(rng, 4) : 0);
  for (std::size_t k = 0; k < mutations; ++k) mutate_once(file.get(), rng);
  auto image = image_of(file.get(), std::max(max_size, size * 2 + (1 << 16)));
  if (image.empty() || image.size() > max_size) image = repacked(file.get(), max_size);
  return image.empty() ? size : store(data, image);
}

}  // namespace kotml::fuzz
