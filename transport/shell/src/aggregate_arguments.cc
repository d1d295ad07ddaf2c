#include "aggregate_arguments.h"

#include <algorithm>
#include <set>
#include <utility>

#include "cairn/core/record.h"

namespace cairn {

Status ParseGroupBy(std::string_view group_by, std::vector<std::string>* names) {
  std::set<std::string> seen;
  for (size_t begin = 0; begin <= group_by.size();) {
    const size_t end = std::min(group_by.find(',', begin), group_by.size());
    std::string name(group_by.substr(begin, end - begin));
    CAIRN_RETURN_IF_ERROR(ValidateIdentifier("--group-by: tag name", name, kMaxFieldNameBytes));
    if (!seen.insert(name).second) return Status::InvalidArgument("--group-by: '" + name + "' is given twice");
    names->push_back(std::move(name));
    begin = end + 1;
  }
  return Status::Ok();
}

Status ParseAggregateFunctions(std::string_view functions, AggregateQuery* query, std::vector<std::string>* names) {
  while (true) {
    const size_t comma = functions.find(',');
    const std::string_view name = functions.substr(0, comma);
    Result<AggregateFunction> function = ParseAggregateFunction(name);
    if (!function.ok()) return function.status().WithContext("--fn");
    query->functions.push_back(*function);
    names->emplace_back(name);
    if (comma == std::string_view::npos) return Status::Ok();
    functions.remove_prefix(comma + 1);
  }
}

}  // namespace cairn
