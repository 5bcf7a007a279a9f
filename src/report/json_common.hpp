#pragma once
// Pieces of the JSON document shared by every command's output.
#include <nlohmann/json.hpp>

#include "core/record.hpp"

namespace xb {

using ojson = nlohmann::ordered_json;

ojson field_json(const FieldValue& v);
// {"schema", "tool", "env", "command"}: the head of every document.
ojson document_head(const std::string& command, const EnvInfo& env);
// One record as the documents write it.
ojson record_json(const Record& r);

}  // namespace xb
