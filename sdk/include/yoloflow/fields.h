#pragma once
// Annotation fields (what a Sample carries per instance or per image, yoloflow/sample.h) and the
// contract a component declares about them when it registers (yoloflow/plugin.h): which fields
// it gives, keeps and needs. Plain data, no OpenCV, no LibTorch.
#include <cstdint>
#include <string>
#include <vector>

#include "yoloflow/export.h"

namespace yoloflow {

enum class Field : std::uint32_t {
  Boxes = 1u << 0,       // Sample::boxes (class and box of every instance)
  Polygons = 1u << 1,    // Sample::polygons
  Keypoints = 1u << 2,   // Sample::keypoints
  Masks = 1u << 3,       // Sample::masks
  ImageClass = 1u << 4,  // Sample::image_class
};

// A set of fields.
class YOLOFLOW_SDK_API Fields {
 public:
  constexpr Fields() = default;
  constexpr Fields(Field f) : bits_(static_cast<std::uint32_t>(f)) {}  // NOLINT: a field is a set of one
  static constexpr Fields all() { return Fields(0x1fu); }
  static constexpr Fields none() { return Fields(0u); }
  constexpr bool has(Field f) const { return (bits_ & static_cast<std::uint32_t>(f)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr bool contains(Fields o) const { return (bits_ & o.bits_) == o.bits_; }
  constexpr Fields operator|(Fields o) const { return Fields(bits_ | o.bits_); }
  constexpr Fields operator&(Fields o) const { return Fields(bits_ & o.bits_); }
  constexpr Fields without(Fields o) const { return Fields(bits_ & ~o.bits_); }
  constexpr bool operator==(Fields o) const { return bits_ == o.bits_; }
  constexpr bool operator!=(Fields o) const { return bits_ != o.bits_; }
  constexpr std::uint32_t bits() const { return bits_; }
  // "boxes, polygons"; "nothing" when empty.
  std::string names() const;

 private:
  constexpr explicit Fields(std::uint32_t bits) : bits_(bits & 0x1fu) {}
  std::uint32_t bits_ = 0;
};
constexpr Fields operator|(Field a, Field b) { return Fields(a) | Fields(b); }

YOLOFLOW_SDK_API const char* field_name(Field f);  // "boxes", "polygons", ...
// Every field, in declaration order.
YOLOFLOW_SDK_API std::vector<Field> all_fields();

// What a component declares about annotation fields (see the top of this file). The defaults
// of each kind are those of a detection component: a source gives boxes, an augmentation keeps
// boxes (and nothing else: a stage that does not declare polygons gets samples without them), a
// batcher keeps boxes, a loss needs boxes.
struct AnnotationContract {
  Fields gives;
  Fields keeps;
  Fields needs;
  bool declared = false;  // false: the kind's default applies
};
YOLOFLOW_SDK_API AnnotationContract gives(Fields fields);
YOLOFLOW_SDK_API AnnotationContract keeps(Fields fields);
YOLOFLOW_SDK_API AnnotationContract needs(Fields fields);

}  // namespace yoloflow
