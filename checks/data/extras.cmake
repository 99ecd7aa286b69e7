# checks/data: the CSV test writes .gz files with zlib itself.
find_package(ZLIB REQUIRED)
target_link_libraries(check_data PRIVATE ZLIB::ZLIB)
