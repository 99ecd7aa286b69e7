# check_display links the library it tests, and cairo to decode the PNGs it makes.
if(TARGET check_display)
  target_link_libraries(check_display PRIVATE gradlab_display PkgConfig::GRADLAB_CAIRO)
endif()
