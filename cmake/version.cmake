# Run at build time (cmake -P): writes OUT (tilec_build_info.h) from IN with
# the project version and the git commit of SRC_DIR, when it is a git
# checkout ("" otherwise; "-dirty.XXXXXXXX" when tracked files differ from
# HEAD, XXXXXXXX from a hash of that difference, so that two builds with
# different uncommitted changes never share compile-cache entries).
# configure_file leaves OUT untouched when its text is unchanged, so only a
# new commit recompiles lib/version.c.
set(TILEC_GIT_COMMIT "")
find_package(Git QUIET)
if(GIT_FOUND AND EXISTS "${SRC_DIR}/.git")
  execute_process(COMMAND ${GIT_EXECUTABLE} -C "${SRC_DIR}" rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE rc ERROR_QUIET)
  if(rc EQUAL 0 AND commit)
    execute_process(COMMAND ${GIT_EXECUTABLE} -C "${SRC_DIR}" status --porcelain --untracked-files=no
                    OUTPUT_VARIABLE changes RESULT_VARIABLE rc2 ERROR_QUIET)
    if(rc2 EQUAL 0 AND NOT changes STREQUAL "")
      execute_process(COMMAND ${GIT_EXECUTABLE} -C "${SRC_DIR}" diff HEAD
                      OUTPUT_VARIABLE diff ERROR_QUIET)
      string(SHA1 diff_hash "${diff}")
      string(SUBSTRING "${diff_hash}" 0 8 diff_hash)
      string(APPEND commit "-dirty.${diff_hash}")
    endif()
    set(TILEC_GIT_COMMIT "${commit}")
  endif()
endif()
configure_file("${IN}" "${OUT}" @ONLY)
