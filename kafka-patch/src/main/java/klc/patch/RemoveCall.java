package klc.patch;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Enumeration;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import java.util.zip.ZipOutputStream;

import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.Type;

/**
 * Copies a jar with one call removed from one class: every invocation of {@code OWNER.NAME} inside
 * the methods named {@code METHOD} of {@code CLASS} is replaced by instructions that drop its
 * receiver and arguments and push its return type's zero.  The stack is the same after the
 * replacement as after the call, so the class verifies as before.
 *
 * <pre>java -cp kafka-patch-1.jar:asm.jar klc.patch.RemoveCall IN.jar OUT.jar CLASS METHOD OWNER.NAME</pre>
 *
 * CLASS and OWNER are internal names (a/b/C).  Exit status 0 with the count of removed calls on
 * stdout; 1 when no call was removed (the patch would not break anything: refuse it); 2 on bad
 * arguments or an unreadable jar.
 */
public final class RemoveCall {
    private RemoveCall() {}

    public static void main(String[] args) throws IOException {
        if (args.length != 5 || !args[4].contains(".")) {
            System.err.println("usage: RemoveCall IN.jar OUT.jar CLASS METHOD OWNER.NAME");
            System.exit(2);
        }
        String entryName = args[2] + ".class";
        int dot = args[4].lastIndexOf('.');
        String owner = args[4].substring(0, dot), name = args[4].substring(dot + 1);
        int[] removed = {0};
        try (ZipFile in = new ZipFile(args[0]);
             ZipOutputStream out = new ZipOutputStream(Files.newOutputStream(Path.of(args[1])))) {
            if (in.getEntry(entryName) == null) {
                System.err.println(args[0] + " has no " + entryName);
                System.exit(2);
            }
            for (Enumeration<? extends ZipEntry> e = in.entries(); e.hasMoreElements(); ) {
                ZipEntry entry = e.nextElement();
                byte[] bytes;
                try (InputStream s = in.getInputStream(entry)) {
                    bytes = s.readAllBytes();
                }
                if (entry.getName().equals(entryName)) {
                    bytes = patch(bytes, args[3], owner, name, removed);
                }
                out.putNextEntry(new ZipEntry(entry.getName()));
                out.write(bytes);
                out.closeEntry();
            }
        }
        if (removed[0] == 0) {
            System.err.println("no call of " + args[4] + " in " + args[2] + "." + args[3]);
            Files.deleteIfExists(Path.of(args[1]));
            System.exit(1);
        }
        System.out.println(removed[0]);
    }

    static byte[] patch(byte[] bytes, String method, String owner, String name, int[] removed) {
        ClassReader reader = new ClassReader(bytes);
        ClassWriter writer = new ClassWriter(reader, ClassWriter.COMPUTE_MAXS);
        reader.accept(new ClassVisitor(Opcodes.ASM9, writer) {
            @Override
            public MethodVisitor visitMethod(int access, String m, String desc, String sig, String[] exceptions) {
                MethodVisitor mv = super.visitMethod(access, m, desc, sig, exceptions);
                return m.equals(method) ? new Dropper(mv, owner, name, removed) : mv;
            }
        }, 0);
        return writer.toByteArray();
    }

    /** Replaces each call of owner.name with pops of its operands and its return type's zero. */
    private static final class Dropper extends MethodVisitor {
        private final String owner, name;
        private final int[] removed;

        Dropper(MethodVisitor mv, String owner, String name, int[] removed) {
            super(Opcodes.ASM9, mv);
            this.owner = owner;
            this.name = name;
            this.removed = removed;
        }

        @Override
        public void visitMethodInsn(int opcode, String o, String n, String desc, boolean itf) {
            if (!o.equals(owner) || !n.equals(name)) {
                super.visitMethodInsn(opcode, o, n, desc, itf);
                return;
            }
            Type[] arguments = Type.getArgumentTypes(desc);
            for (int i = arguments.length - 1; i >= 0; i--) {
                super.visitInsn(arguments[i].getSize() == 2 ? Opcodes.POP2 : Opcodes.POP);
            }
            if (opcode != Opcodes.INVOKESTATIC) {
                super.visitInsn(Opcodes.POP);
            }
            pushZero(Type.getReturnType(desc));
            removed[0]++;
        }

        private void pushZero(Type type) {
            switch (type.getSort()) {
                case Type.VOID -> { }
                case Type.LONG -> super.visitInsn(Opcodes.LCONST_0);
                case Type.FLOAT -> super.visitInsn(Opcodes.FCONST_0);
                case Type.DOUBLE -> super.visitInsn(Opcodes.DCONST_0);
                case Type.OBJECT, Type.ARRAY -> super.visitInsn(Opcodes.ACONST_NULL);
                default -> super.visitInsn(Opcodes.ICONST_0);
            }
        }
    }
}
