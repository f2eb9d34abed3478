/* long asm_spin(long n)
 *
 * Hand-written x86-64 function with explicit CFI:
 *   push %rbx          CFA = rsp+16, rbx at CFA-16
 *   push %r12          CFA = rsp+24, r12 at CFA-24
 *   sub  $24, %rsp     CFA = rsp+48   (rsp is 16-byte aligned here)
 * Loop: a short busy spin inside asm_spin itself (so some samples land in
 * this function with CFA = rsp+48), then call asm_callback(i); sum results.
 * No frame pointer is used; rbp is never touched.
 */
        .text
        .globl  asm_spin
        .type   asm_spin, @function
        .p2align 4
asm_spin:
        .cfi_startproc
        pushq   %rbx
        .cfi_adjust_cfa_offset 8
        .cfi_offset %rbx, -16
        pushq   %r12
        .cfi_adjust_cfa_offset 8
        .cfi_offset %r12, -24
        subq    $24, %rsp
        .cfi_adjust_cfa_offset 24

        movq    %rdi, %rbx              /* remaining calls */
        xorl    %r12d, %r12d            /* accumulator */
        testq   %rbx, %rbx
        jle     .Lasm_spin_done
.Lasm_spin_loop:
        /* ~1000 iterations of local busy work kept in a stack slot. */
        movq    %rbx, 8(%rsp)
        movl    $1000, %ecx
.Lasm_spin_busy:
        movq    8(%rsp), %rax
        imulq   $1103515245, %rax, %rax
        addq    $12345, %rax
        movq    %rax, 8(%rsp)
        decl    %ecx
        jnz     .Lasm_spin_busy

        movq    %rbx, %rdi
        call    asm_callback@PLT
        addq    %rax, %r12
        addq    8(%rsp), %r12
        decq    %rbx
        jnz     .Lasm_spin_loop
.Lasm_spin_done:
        movq    %r12, %rax
        addq    $24, %rsp
        .cfi_adjust_cfa_offset -24
        popq    %r12
        .cfi_adjust_cfa_offset -8
        .cfi_restore %r12
        popq    %rbx
        .cfi_adjust_cfa_offset -8
        .cfi_restore %rbx
        ret
        .cfi_endproc
        .size   asm_spin, .-asm_spin

        .section .note.GNU-stack,"",@progbits
