# Shared by the embed scripts (cmake -P): a file's content as a C++ raw string literal,
# and writing a generated source only when it changed (so nothing rebuilds needlessly).

# ff_raw_string(<out-var> <content> <delimiter> <name for messages>)
function(ff_raw_string out content delim name)
  string(FIND "${content}" ")${delim}\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${name} contains the raw-string delimiter )${delim}\"")
  endif()
  set(${out} "R\"${delim}(${content})${delim}\"" PARENT_SCOPE)
endfunction()

# ff_write_if_changed(<path> <text>)
function(ff_write_if_changed path text)
  if(EXISTS "${path}")
    file(READ "${path}" old)
    if(old STREQUAL text)
      return()
    endif()
  endif()
  file(WRITE "${path}" "${text}")
endfunction()
