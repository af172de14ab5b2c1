# SPDX-License-Identifier: MIT
#
# ust_man_links(MANDIR): for every installed page MANDIR/manN/PAGE.S whose
# NAME section (the .Nm lines before .Nd) lists other names, make
# MANDIR/manN/NAME.S a symbolic link to PAGE.S, so that `man NAME` finds the
# page.  Included at install time (CMakeLists.txt, "ABI and man pages").
# A name that already has its own page is left alone (never overwritten).
function(ust_man_links mandir)
    file(GLOB _pages "${mandir}/man[0-9]/*.[0-9]*")
    foreach(_page IN LISTS _pages)
        if(IS_SYMLINK "${_page}")
            continue()
        endif()
        get_filename_component(_dir "${_page}" DIRECTORY)
        get_filename_component(_file "${_page}" NAME)
        string(REGEX MATCH "\\.[0-9][a-z]*$" _ext "${_file}")
        file(STRINGS "${_page}" _lines REGEX "^\\.(Nm|Nd|Sh)")
        set(_in_name FALSE)
        foreach(_l IN LISTS _lines)
            if(_l MATCHES "^\\.Sh NAME")
                set(_in_name TRUE)
            elseif(_l MATCHES "^\\.Nd" OR _l MATCHES "^\\.Sh")
                break()
            elseif(_in_name AND _l MATCHES "^\\.Nm ([A-Za-z_0-9-]+)")
                set(_link "${_dir}/${CMAKE_MATCH_1}${_ext}")
                if(NOT "${CMAKE_MATCH_1}${_ext}" STREQUAL "${_file}" AND
                   (IS_SYMLINK "${_link}" OR NOT EXISTS "${_link}"))
                    file(CREATE_LINK "${_file}" "${_link}" SYMBOLIC)
                endif()
            endif()
        endforeach()
    endforeach()
endfunction()
