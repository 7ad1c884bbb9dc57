// rsl-controller: placeholder until the controller issue lands.
#include <cstring>
#include <iostream>

int main(int argc, char** argv) {
  std::cout << "rsl-controller 0.1.0" << std::endl;
  return 0;
}
