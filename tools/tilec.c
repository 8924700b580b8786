/* placeholder CLI */
int main(void) { return 0; }
