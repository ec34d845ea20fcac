/* fake_plugin_dep.c: the library libooc_fake_cuda_dep.so needs and cannot find (fake_plugin.c). */
__attribute__((visibility("default"))) int ooc_fakedep_answer(void) { return 42; }
