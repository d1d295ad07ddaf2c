// Not compiled: layering_check_fails scans it as if it were part of
// cairn_text, and the check must fail on line 4.
#include "cairn/text/json_value.h"
#include "cairn/shell/command_registry.h"
